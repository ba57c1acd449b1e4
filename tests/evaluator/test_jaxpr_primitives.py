"""The jaxpr primitives added for users' functions, each on the device's arithmetic in its stated order:
gathers and scatter-adds (the GATHER class, one-hot lowering included), running reductions
(Kogge-Stone), reduce_prod, atan2 and the special functions; the fused exchange equals the
equation-by-equation walk."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.engines.jax_engine import JaxOps
from hwbench.core.ops import OpClass
from hwbench.core.plugins import get_registry
from hwbench.evaluator.arith import Arith
from hwbench.evaluator.jaxpr.program import FunctionProgram
from hwbench.plugins.devices.arithmetic import device_arith

RNG = np.random.default_rng(7)
IDX = np.array([3, 0, 2, 2, 5, 0, 1, 3, 3])  # unsorted, repeated: the scatter's list order matters


def _run(fn, args, arith, intermediates=False):
    program = FunctionProgram(fn, args)
    return program.compile(arith, intermediates=intermediates)(program.flat_inputs(args))


def every_new_primitive(v, m, rows):
    return (
        v[IDX],
        rows[:, np.array([1, 0, 2])],
        rows[IDX],
        jnp.zeros(6).at[IDX].add(m),
        v.at[IDX].add(m),
        jax.ops.segment_sum(rows[: len(IDX)], IDX, 6),
        jnp.cumsum(v),
        lax.cumsum(rows, axis=0, reverse=True),
        jnp.cumprod(v / 4.0),
        lax.cummax(v),
        lax.cummin(v),
        jnp.prod(v / 4.0),
        jnp.arctan2(v, v + 1.5),
        jax.scipy.special.erfinv(v / 4.0),
        jax.scipy.special.erfc(v),
        jnp.exp2(v),
        lax.lgamma(v + 4.0),
        lax.digamma(v + 4.0),
    )


def _args():
    v = RNG.uniform(-2, 2, 6).astype(np.float32)
    m = RNG.uniform(-1, 1, len(IDX)).astype(np.float32)
    rows = RNG.normal(0, 1, (len(IDX), 3)).astype(np.float32)
    return v, m, rows


def test_native_fp32_evaluation_equals_the_jitted_function() -> None:
    args = _args()
    got = list(_run(every_new_primitive, args, Arith(JaxOps("float32"), "jax")).outputs.values())
    want = [np.asarray(w) for w in jax.jit(every_new_primitive)(*args)]
    assert len(got) == len(want) == 18
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=3e-6, atol=1e-7)


def test_groq_gathers_round_the_source_to_fp16_and_scatter_sums_in_list_order() -> None:
    v = (1 + RNG.integers(1, 2**20, 6) * 2.0**-22).astype(np.float32)  # not representable in fp16
    m = (1 + RNG.integers(1, 2**20, len(IDX)) * 2.0**-22).astype(np.float32)
    groq = device_arith(get_registry(), "groq")
    gathered = _run(lambda a: a[IDX], (v,), groq).outputs["out0"]
    assert np.array_equal(gathered, v.astype(np.float16).astype(np.float32)[IDX])
    exact = _run(lambda a: a[IDX], (v,), device_arith(get_registry(), "a100", "cuda-fp32")).outputs["out0"]
    assert np.array_equal(exact, v[IDX])
    summed = _run(lambda b: jnp.zeros(6).at[IDX].add(b), (m,), groq).outputs["out0"]
    oracle = np.zeros(6, np.float32)
    for j, target in enumerate(IDX):  # the one-hot product: fp16 terms, fp32 partial sums, list order
        oracle[target] = np.float32(oracle[target] + np.float32(np.float16(m[j])))
    assert np.array_equal(summed, oracle)


def _bf16_additions() -> Arith:
    """A device that rounds every addition to bf16 (nearest even): the order of a sum shows."""
    add = OpNumerics(format="bf16", source="assumption: test profile", confidence=Confidence.ASSUMED)
    profile = NumericsProfile(name="bf16-add", device="test", mode="bf16", carrier="float32", ops={OpClass.ADD: add})
    return Arith(emulating_ops(profile, counters=False)(JaxOps("float32")), "jax", label="bf16 additions")


def _bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def test_cumsum_is_a_kogge_stone_prefix_of_the_devices_additions() -> None:
    x = RNG.uniform(0.5, 1.5, 13).astype(np.float32)
    got = _run(jnp.cumsum, (x,), _bf16_additions()).outputs["out0"]
    want, shift = x.copy(), 1
    while shift < len(x):  # round k adds the partial 2**k before, every sum rounded to bf16
        want = np.concatenate([want[:shift], _bf16(want[:-shift] + want[shift:])])
        shift *= 2
    assert np.array_equal(got, want)
    sequential = np.cumsum(x)  # a left-to-right order would differ: the test sees the order
    assert not np.array_equal(got, _bf16(sequential))


def test_the_fused_exchange_gives_the_walks_bits() -> None:
    """gather, map, scatter-add over one list: fused (no equation kept) and one by one (all kept)."""
    src, tgt = np.array([1, 2, 0, 3, 4, 0, 2]), np.array([0, 0, 1, 1, 2, 3, 4])

    def exchange(x):
        def junction(a, b):
            dv = a - b
            return dv * (0.2 + 0.8 * jnp.exp(-(dv**2) / 100))

        return 0.05 * jnp.zeros(5, x.dtype).at[tgt].add(junction(x[src], x[tgt]))

    x = RNG.normal(-60, 3, 5).astype(np.float32)
    for name, mode in [("groq", None), ("ipu", "fp16-sr"), ("a100", "cuda-fp32")]:
        arith = device_arith(get_registry(), name, mode)
        fused = _run(exchange, (x,), arith).outputs["out0"]
        walked = _run(exchange, (x,), device_arith(get_registry(), name, mode), intermediates=True).outputs["out0"]
        assert np.array_equal(fused.view(np.uint32), walked.view(np.uint32)), name
