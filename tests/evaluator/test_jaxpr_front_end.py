"""The jaxpr front end: a user's JAX function on a device's arithmetic, through the one evaluator."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from hwbench.core.engines.jax_engine import JaxOps
from hwbench.core.errors import UsageError
from hwbench.core.plugins import get_registry
from hwbench.evaluator.arith import Arith
from hwbench.evaluator.jaxpr.program import FunctionProgram
from hwbench.plugins.devices.arithmetic import device_arith


@jax.custom_vjp
def clipped(x):
    return jnp.clip(x, -3.0, 3.0)


clipped.defvjp(lambda x: (clipped(x), None), lambda _, g: (g,))


def solver(x, w):
    def body(c, xi):
        c = jnp.tanh(c @ w + xi)
        return c, jnp.sum(c)

    c, ys = lax.scan(body, jnp.zeros(w.shape[0], x.dtype), x)
    z = jax.nn.softmax(jax.jit(lambda v: v * 3.0)(clipped(c)))
    y = lax.cond(z[0] > 0.1, lambda v: v * 2, lambda v: v / 2, z)
    _, s = lax.fori_loop(0, 4, lambda k, st: (st[0] + 1, st[1] + jnp.exp(-st[1])), (0, jax.nn.relu(z)))
    return y, ys, s


def _args() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(0, 1, (12, 8)).astype(np.float32), rng.normal(0, 0.3, (8, 8)).astype(np.float32)


def test_native_fp32_evaluation_equals_the_jitted_function() -> None:
    args = _args()
    prog = FunctionProgram(solver, args)
    out = prog.compile(Arith(JaxOps("float32"), "jax"))(prog.flat_inputs(args))
    plain = jax.tree_util.tree_leaves(jax.jit(solver)(*args))
    for got, want in zip(jax.tree_util.tree_leaves(prog.unflatten(out.outputs)), plain):
        np.testing.assert_allclose(got, np.asarray(want), rtol=2e-6, atol=1e-7)


def test_float64_reference_widens_the_traced_float32_function() -> None:
    args = _args()
    prog = FunctionProgram(solver, args)
    out = prog.compile(Arith(JaxOps("float64"), "jax"))(prog.flat_inputs(args))
    assert all(v.dtype == np.float64 for v in out.outputs.values())
    with jax.enable_x64(True):
        want = jax.tree_util.tree_leaves(jax.jit(solver)(*(a.astype(np.float64) for a in args)))
    for got, w in zip(out.outputs.values(), want):
        np.testing.assert_allclose(got, np.asarray(w), rtol=1e-12)


def test_equations_carry_source_lines_and_products_round_on_the_device() -> None:
    args = _args()
    prog = FunctionProgram(solver, args)
    lines = {i.source for i in prog.infos}
    assert any(s.startswith("test_jaxpr_front_end.py:") and "(solver)" in s for s in lines)
    ipu = device_arith(get_registry(), "ipu", "fp16-sr")
    run = prog.compile(ipu, intermediates=True)(prog.flat_inputs(args))
    scan_out = next(i for i in prog.infos if i.op_type == "scan").outputs[0]
    v = run.tensors[scan_out]
    assert np.array_equal(v.astype(np.float16).astype(np.float32), v)  # stored in fp16


def test_bad_functions_and_arguments_are_one_usage_error() -> None:
    def branchy(x):
        if x.sum() > 0:  # Python control flow on a traced value
            return x
        return -x

    with pytest.raises(UsageError, match=r"branchy is not traceable.*test_jaxpr_front_end.py:\d+"):
        FunctionProgram(branchy, (np.ones(3, np.float32),))
    with pytest.raises(UsageError, match="argument leaf 0 is a str"):
        FunctionProgram(jnp.sin, ("x",))
    unsupported = r"primitive .fft. at test_jaxpr_front_end.py:\d+ \(.*<lambda>\) is not supported"
    with pytest.raises(UsageError, match=unsupported):
        FunctionProgram(lambda x: jnp.fft.fft(x).real, (np.ones(4, np.float32),))
