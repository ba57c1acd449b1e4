"""The emulation's fused gather-map-scatter equals the composition it replaces, bit for bit.

Under jax.jit, on a pass-major connection list (io-ehh's 64-cell torus), for the device profiles
that take the fused path (one-hot lowering with fp16 / TF32 inputs, an error model in the map,
stochastic rounding keyed by element) and for the inputs where the one-hot lowering's special
rules act: one or two non-finite sources, NaN, terms that overflow the matrix unit's input
format, and sums of negative zeros (the table lowering's padding turned them into +0).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from hwbench.accuracy.numerics.emulate import EmulatingOps, emulating_ops  # noqa: E402
from hwbench.accuracy.numerics.formats import custom_float  # noqa: E402
from hwbench.accuracy.numerics.fused_exchange import fused_gather_map_scatter  # noqa: E402
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics  # noqa: E402
from hwbench.core.engines.jax_engine import JaxOps  # noqa: E402
from hwbench.core.ops import OpClass, gather_map_scatter  # noqa: E402
from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.plugins.kernels.io_ehh import IoEhhKernel  # noqa: E402

M7 = custom_float(7, -126, 127, name="m7")
STOCHASTIC = NumericsProfile(
    name="stochastic-map",
    device="test",
    mode="test",
    ops={
        cls: OpNumerics(format=M7, rounding="stochastic", random_bits=12, source="test", confidence=Confidence.ASSUMED)
        for cls in (OpClass.ADD, OpClass.MUL, OpClass.EXP)
    },
)

ONE_HOT_BF16 = NumericsProfile(
    name="one-hot-bf16",
    device="test",
    mode="test",
    ops={
        OpClass.GATHER: OpNumerics(
            format="fp32", lowering="one-hot-matmul", source="test", confidence=Confidence.ASSUMED
        ),
        # bf16 terms keep fp32's range: finite terms can sum to inf, so non-finite terms are tracked
        OpClass.MATMUL_INPUT: OpNumerics(format="bf16", source="test", confidence=Confidence.ASSUMED),
    },
)


def _profiles() -> dict[str, NumericsProfile]:
    devices = get_registry().devices
    return {
        "groq-default": devices["groq"].numerics("default"),
        "groq-fp32-exact-vector": devices["groq"].numerics("fp32-exact-vector"),
        "a100-tensorrt": devices["a100"].numerics("tensorrt"),
        "tpu-v3-default": devices["tpu-v3"].numerics("default"),
        "stochastic-map": STOCHASTIC,
        "one-hot-bf16": ONE_HOT_BF16,
    }


def _message(v_src: Any, v_tgt: Any) -> Any:
    """io-ehh's Connexin-36 junction map."""
    dv = v_src - v_tgt
    return dv * (0.2 + 0.8 * v_src._ops.exp(-(dv**2) / 100))


@pytest.fixture(scope="module")
def network() -> tuple[np.ndarray, np.ndarray, int]:
    wl = IoEhhKernel().make_workload(64, connected=True, seed=0)
    return np.asarray(wl.arrays["src"]), np.asarray(wl.arrays["tgt"]), wl.size


def _sources(n: int, src: np.ndarray, tgt: np.ndarray) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    base = rng.normal(-60, 15, n).astype(np.float32)
    one_inf, two_inf, nan, overflow, zeros = (base.copy() for _ in range(5))
    one_inf[7] = np.inf
    two_inf[[3, 40]] = (np.inf, -np.inf)
    nan[11] = np.nan
    overflow[[5, 30]] = (2e5, -3e5)  # beyond fp16: inf after the one-hot input rounding, and huge terms
    zeros[:] = np.where(rng.random(n) < 0.5, -0.0, 0.0)  # -0 - +0 = -0: sums of negative zeros
    # finite terms (0.2 x 3.4e38 each) whose carrier sum overflows: bf16 terms keep fp32's range
    big_sum = base.copy()
    big_sum[src[tgt == 0]], big_sum[0] = 1.7e38, -1.7e38
    return {
        "finite": base,
        "one-inf": one_inf,
        "two-inf": two_inf,
        "nan": nan,
        "overflow": overflow,
        "zeros": zeros,
        "finite-terms-sum-to-inf": big_sum,
    }


@pytest.mark.parametrize("name", list(_profiles()))
def test_fused_equals_composition(name: str, network: tuple[np.ndarray, np.ndarray, int]) -> None:
    src, tgt, n = network
    ops = emulating_ops(_profiles()[name], counters=False)(JaxOps(np.float32))
    assert isinstance(ops, EmulatingOps)

    def run(x: Any, step: Any, fused: bool) -> Any:
        ops.begin_step(step)
        v = ops.load(x)
        if fused:
            assert fused_gather_map_scatter(ops, _message, v, src, tgt, n) is not None  # the fused path is taken
            ops.begin_step(step)
            out = gather_map_scatter(ops, _message, v, src, tgt, n)
        else:
            out = ops.scatter_add(_message(ops.gather(v, src), ops.gather(v, tgt)), tgt, n)
        return out.raw, jnp.asarray(ops._op)  # the result, and the op numbers it used

    fused = jax.jit(lambda x, s: run(x, s, True))
    composed = jax.jit(lambda x, s: run(x, s, False))
    for label, x in _sources(n, src, tgt).items():
        for step in (0, 17):
            (a, ops_a), (b, ops_b) = fused(x, jnp.int32(step)), composed(x, jnp.int32(step))
            a, b = np.asarray(a), np.asarray(b)
            same = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
            assert same.all(), f"{name}, {label}, step {step}: {int((~same).sum())} of {n} differ"
            assert int(ops_a) == int(ops_b)


def test_counters_and_traced_indices_compose(network: tuple[np.ndarray, np.ndarray, int]) -> None:
    """Counters count per op over whole arrays, and a traced index has no plan: both compose."""
    src, tgt, n = network
    profile = _profiles()["groq-default"]
    counting = emulating_ops(profile, counters=True)(JaxOps(np.float32))
    x = jnp.asarray(_sources(n, src, tgt)["finite"])
    counting.begin_step(0)
    assert fused_gather_map_scatter(counting, _message, counting.load(x), src, tgt, n) is None
    plain = emulating_ops(profile, counters=False)(JaxOps(np.float32))
    plain.begin_step(0)
    assert fused_gather_map_scatter(plain, _message, plain.load(x), jnp.asarray(src), tgt, n) is None
