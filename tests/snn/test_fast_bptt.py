"""The Leaky DSNN's hand-written BPTT against ``jax.grad`` through the time loop.

The fast path must give the same loss bit for bit (its forward is the same computation) and the
same weight gradients up to summation order; the snnTorch vectors (``test_snntorch_gradients.py``)
check it against snnTorch itself, since ``loss_fn`` takes the fast path wherever it applies.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from hwbench.plugins.kernels.snn import fast_bptt  # noqa: E402
from hwbench.plugins.kernels.snn import networks as nets  # noqa: E402
from hwbench.plugins.kernels.snn import training as tr  # noqa: E402
from hwbench.plugins.kernels.snn.networks import NetSpec  # noqa: E402
from hwbench.plugins.kernels.snn.surrogate import Surrogate  # noqa: E402


def _both(spec: NetSpec, seed: int, dtype: object, scale: float = 1.0) -> tuple[object, ...]:
    rng = np.random.default_rng(seed)
    params = {k: jnp.asarray(scale * v, dtype) for k, v in nets.init_params(spec, seed).items()}
    x = jnp.asarray(rng.random((16, spec.n_in)), dtype)
    onehot = jnp.asarray(np.eye(10)[rng.integers(0, 10, 16)], dtype)
    ops = tr.JaxTrainOps(dtype, spec.surrogate)
    out = []
    for fast in (True, False):
        f = partial(tr.loss_fn, ops=ops, spec=spec, loss_dtype=dtype, fast=fast)
        out.append(jax.jit(jax.value_and_grad(f))(params, x, onehot))
    return (*out[0], *out[1])


def _check(spec: NetSpec, seed: int, dtype: object, tol: float, scale: float = 1.0) -> None:
    loss, grads, ref_loss, ref_grads = _both(spec, seed, dtype, scale)
    assert float(loss) == float(ref_loss)  # same forward computation: bit-identical loss
    for k, g in ref_grads.items():
        ref = np.asarray(g, np.float64)
        assert np.abs(ref).max() > 0, f"{k}: the case must exercise the gradient"
        err = np.abs(np.asarray(grads[k], np.float64) - ref).max() / np.abs(ref).max()
        assert err < tol, f"{k}: relative error {err:.2e}"


@pytest.mark.parametrize("reset", ["subtract", "zero"])
@pytest.mark.parametrize("sg", ["atan", "fast_sigmoid"])
def test_fast_bptt_equals_autodiff_float64(reset: str, sg: str) -> None:
    spec = NetSpec(n_in=64, hidden=48, n_steps=25, reset=reset, surrogate=Surrogate(sg))
    assert fast_bptt.applies(spec)
    with jax.enable_x64(True):
        _check(spec, 3, jnp.float64, 1e-12, scale=3.0)


@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_fast_bptt_equals_autodiff_float32(reset: str) -> None:
    """float32: summation order moves the gradients by a few float32 ulps of their largest magnitude."""
    _check(NetSpec(n_in=784, hidden=200, reset=reset), 1, jnp.float32, 2e-6, scale=3.0)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), steps=st.integers(1, 12), beta=st.floats(0.5, 0.99), thr=st.floats(0.3, 1.5))
def test_fast_bptt_property(seed: int, steps: int, beta: float, thr: float) -> None:
    reset = "zero" if seed % 2 else "subtract"
    spec = NetSpec(n_in=20, hidden=24, n_steps=steps, beta=beta, thr=thr, reset=reset)
    with jax.enable_x64(True):
        loss, grads, ref_loss, ref_grads = _both(spec, seed, jnp.float64, scale=4.0)
    assert float(loss) == float(ref_loss)
    for k, g in ref_grads.items():
        np.testing.assert_allclose(np.asarray(grads[k]), np.asarray(g), rtol=0, atol=1e-12 * (1 + np.abs(g).max()))


def test_fast_path_only_where_it_applies() -> None:
    assert not fast_bptt.applies(NetSpec(neuron="synaptic"))
    assert not fast_bptt.applies(NetSpec(neuron="rleaky"))
    assert not fast_bptt.applies(NetSpec(encoding="rate"))
    assert not fast_bptt.applies(NetSpec(net="csnn"))
    ops = tr.JaxTrainOps(jnp.float32, Surrogate())
    assert ops.heaviside_detached

    class Undetached(tr.JaxTrainOps):
        def detach(self, x: object) -> object:
            return x

    assert not Undetached(jnp.float32, Surrogate()).heaviside_detached
