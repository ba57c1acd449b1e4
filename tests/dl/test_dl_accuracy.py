"""DL accuracy protocol: each device's rounding of matrix inputs bit for bit, the TPU's three
precision modes against theory, bounds, and a FAIL that names the element beyond its bound."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.accuracy.audit import AuditSettings, Candidate, run_audit
from hwbench.accuracy.dl_bounds import bound_model, gamma
from hwbench.accuracy.verdict import Verdict
from hwbench.core.errors import UsageError
from hwbench.core.plugins import get_registry
from hwbench.plugins.devices.arithmetic import ops_wrapper
from hwbench.plugins.kernels.dl import execute
from hwbench.plugins.kernels.dl.audit import (
    DLCandidate,
    candidate_profile,
    compare,
    judge,
    resolve_candidates,
)
from hwbench.plugins.kernels.dl.kernels import GemmKernel, LstmKernel


@pytest.fixture(scope="module")
def registry():
    return get_registry()


def matrix_with_ties(n: int = 48) -> np.ndarray:
    """Normal values plus values exactly halfway between TF32 / fp16 / bf16 neighbours."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((n, n)).astype(np.float32)
    bits = a.view(np.uint32).copy()
    bits[:4] = (bits[:4] & np.uint32(0xFFFFE000)) | np.uint32(0x1000)  # TF32 / fp16 ties
    bits[4:8] = (bits[4:8] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)  # bf16 ties
    return bits.view(np.float32)


def emulated_times_identity(registry, device: str, mode: str, a: np.ndarray) -> np.ndarray:
    """A @ I under the device's profile: products by 1 and sums with 0 are exact, so the output
    is exactly the matrix unit's view of A (then the stored output's rounding)."""
    k = GemmKernel()
    wl = k.make_workload(a.shape[1], m=a.shape[0], k=a.shape[1])
    wl.arrays["A"], wl.arrays["B"] = a, np.eye(a.shape[1], dtype=np.float32)
    profile = candidate_profile(registry, DLCandidate(device, mode))
    return execute.runner(k, wl, "numpy", "float32", ops_wrapper(profile, 0))().astype(np.float32)


def tf32_nearest_away(a: np.ndarray) -> np.ndarray:
    bits = a.view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def test_a100_tensorrt_rounds_inputs_to_tf32_ties_away(registry) -> None:
    a = matrix_with_ties()
    got = emulated_times_identity(registry, "a100", "tensorrt", a)
    np.testing.assert_array_equal(got.view(np.uint32), tf32_nearest_away(a).view(np.uint32))


def test_tpu_default_rounds_inputs_to_bf16(registry) -> None:
    a = matrix_with_ties()
    want = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    got = emulated_times_identity(registry, "tpu-v3", "default", a)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_tpu_high_sees_truncated_hi_plus_nearest_lo(registry) -> None:
    a = matrix_with_ties()
    hi = (a.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    lo = (a - hi).astype(ml_dtypes.bfloat16).astype(np.float32)
    got = emulated_times_identity(registry, "tpu-v3", "high", a)
    np.testing.assert_array_equal(got.view(np.uint32), (hi + lo).view(np.uint32))
    assert not np.array_equal(got, a)  # 16 bits of 24: HIGH is not fp32


def test_tpu_highest_splits_fp32_exactly(registry) -> None:
    a = matrix_with_ties()
    got = emulated_times_identity(registry, "tpu-v3", "highest", a)
    np.testing.assert_array_equal(got.view(np.uint32), a.view(np.uint32))


@pytest.mark.parametrize("device,mode", [("ipu", "fp16-sr"), ("groq", "default")])
def test_fp16_matrix_units_round_inputs_to_fp16(registry, device: str, mode: str) -> None:
    a = matrix_with_ties()
    want = a.astype(np.float16).astype(np.float32)
    got = emulated_times_identity(registry, device, mode, a)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def dl_audit(registry, kernel: str, dists: tuple[str, ...], candidates: list[Candidate]):
    """The DL protocol on the audit engine, as ``hwbench audit --kernel K --quick`` runs it."""
    settings = AuditSettings(kernel=kernel, quick=True, seed=0, options={"dists": dists})
    return run_audit(registry, settings, candidates)[0]


def test_tpu_modes_error_ratios_follow_the_pass_count(registry) -> None:
    """Normwise error: DEFAULT (bf16, u = 2^-8) / HIGH (bf16x3, ~2^-16) ~ 2^7..2^9; HIGHEST is
    fp32-level (its split of fp32 is exact; only mid*lo terms are dropped, ~2^-22)."""
    report = dl_audit(registry, "gemm", ("normal",), [Candidate("tpu-v3")])
    (p,) = report.protocols
    err = {r.label: r.deviation["normwise_rel"] for r in p.runs}
    default, high, highest = (err[f"tpu-v3:{m}"] for m in ("default", "high", "highest"))
    fp32 = err["cpu fp32 reference"]
    assert 30 < default / high < 3000, (default, high)
    assert high / highest > 10, (high, highest)
    assert highest < 2 * fp32, (highest, fp32)
    assert all(v.verdict is Verdict.PASS for v in p.verdicts)
    assert all(r.metrics["throughput"]["gflops"] > 0 for r in p.runs)  # every run carries the kernel's metrics


def test_every_device_within_its_bound_on_conv(registry) -> None:
    cands = [Candidate("a100", "tensorrt"), Candidate("ipu", "fp16-sr"), Candidate("groq", "default")]
    report = dl_audit(registry, "conv2d", ("uniform-positive",), cands)
    (p,) = report.protocols
    assert [v.verdict for v in p.verdicts] == [Verdict.PASS] * 3
    assert all(0 < r.deviation["max_over_det"] <= 1 for r in p.runs[1:])


def test_fp16_partials_have_no_deterministic_bound_and_sr_differs(registry) -> None:
    """IPU partials=half: K u >= 1 for K = 1760 under SR (u = 2^-10), so no gamma_K; SR and
    nearest rounding of the fp16 sums give different errors."""
    report = dl_audit(registry, "gemm", ("uniform-positive",), [Candidate("ipu", None, {"partials": "half"})])
    sr, rn = report.protocols[0].runs[1:]
    assert "max_over_det" not in sr.deviation and "inf" in sr.deviation["bound"]
    assert sr.deviation["normwise_rel"] != rn.deviation["normwise_rel"]
    assert "no deterministic bound" in report.protocols[0].verdicts[0].reasons[0]


def test_bound_model_coefficients(registry) -> None:
    k = 1000
    trt = bound_model(candidate_profile(registry, DLCandidate("a100", "tensorrt")), k)
    p = 2 * 2.0**-11 + 2.0**-22
    assert trt.deterministic == pytest.approx(p + gamma(k, 2.0**-24) * (1 + p))
    assert trt.probabilistic == pytest.approx(p + math.sqrt(k) * 2.0**-24 * (1 + p))
    fp32 = bound_model(None, k)
    assert fp32.deterministic == pytest.approx(gamma(k, 2.0**-24))
    high = bound_model(candidate_profile(registry, DLCandidate("tpu-v3", "high")), k)
    assert high.sums == 3 and fp32.deterministic < high.deterministic < trt.deterministic
    assert gamma(2**24, 2.0**-24) == math.inf


def test_fail_names_the_element_beyond_the_bound(registry) -> None:
    gold = np.arange(1.0, 13.0).reshape(3, 4)
    model = bound_model(None, 10)
    out = gold.copy()
    out[2, 1] *= 1 + 1e-4  # far beyond gamma_10 * |A||B| for fp32
    metrics = compare(out, gold, np.abs(gold), model)
    j = judge(metrics, True)
    assert j.verdict is Verdict.FAIL and j.score > 1 and metrics["beyond_det"] == 1
    assert j.violation is not None and j.violation["index"] == [2, 1]
    assert "(2, 1)" in j.reasons[0] and "bound" in j.reasons[0]
    ok = compare(gold, gold, np.abs(gold), model)
    assert judge(ok, True).verdict is Verdict.PASS
    nan = gold.copy()
    nan[0, 0] = np.nan
    assert judge(compare(nan, gold, np.abs(gold), model), True).verdict is Verdict.FAIL


def test_ipu_stochastic_rounding_differs_from_nearest_in_the_lstm(registry) -> None:
    k = LstmKernel()
    wl = k.make_workload(4, s=3, i=16, h=16)
    outs = []
    for nearest in (False, True):
        profile = candidate_profile(registry, DLCandidate("ipu", "fp16-sr", nearest=nearest))
        outs.append(execute.runner(k, wl, "numpy", "float32", ops_wrapper(profile, 0))()[0])
    assert np.all(np.isfinite(outs[0])) and not np.array_equal(outs[0], outs[1])


def test_candidates_and_refusals(registry) -> None:
    labels = [c.label for c in resolve_candidates(registry, ("ipu",), {})]
    assert labels == ["ipu:fp32", "ipu:fp16-sr", "ipu:fp16-sr (SR->nearest)"]
    half = [c.label for c in resolve_candidates(registry, ("ipu",), {"partials": "half"})]
    assert half == ["ipu:fp16-sr", "ipu:fp16-sr (SR->nearest)"]  # fp32 mode has no 'partials': left out
    with pytest.raises(UsageError, match="partials"):
        resolve_candidates(registry, ("ipu:fp32",), {"partials": "half"})
    with pytest.raises(UsageError, match="no floating-point matrix unit"):
        resolve_candidates(registry, ("loihi",), {})
    with pytest.raises(UsageError, match="choose from"):
        resolve_candidates(registry, ("tpu-v3:fastest",), {})


CANDIDATES = [
    ("a100", "tensorrt"),
    ("tpu-v3", "default"),
    ("tpu-v3", "high"),
    ("tpu-v3", "highest"),
    ("ipu", "fp16-sr"),
    ("groq", "default"),
    ("cpu", "fp32"),
]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.integers(1, 12),
    st.integers(1, 300),
    st.integers(1, 12),
    st.sampled_from(CANDIDATES),
    st.sampled_from(["normal", "uniform-positive", "wide-exponent"]),
    st.integers(0, 2**16),
)
def test_every_emulated_gemm_element_within_its_bound(m, k, n, cand, dist, seed) -> None:
    registry = get_registry()
    kernel = GemmKernel()
    wl = kernel.make_workload(n, m=m, k=k, dist=dist, seed=seed)
    gold = execute.runner(kernel, wl, "numpy", "float64")()
    a, b = (np.abs(wl.arrays[x].astype(np.float64)) for x in "AB")
    profile = candidate_profile(registry, DLCandidate(*cand))
    out = execute.runner(kernel, wl, "numpy", profile.carrier, ops_wrapper(profile, seed))()
    metrics = compare(np.asarray(out, np.float64), gold, a @ b, bound_model(profile, k))
    assert metrics["beyond_det"] == 0, metrics["worst"]
