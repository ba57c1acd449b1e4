"""``hwbench.audit(fn, *args, devices=...)`` and ``hwbench.run(fn, *args, device=...)``: a user's JAX
function on emulated chips, judged against float64, its equations named by their source lines."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import hwbench
from hwbench.core.audit_report import AuditReport
from hwbench.core.errors import UsageError

FIVE = ["groq", "a100:tensorrt", "h100:fp8-e4m3", "tpu-v3", "ipu:fp16-sr"]


def solver(x, w):
    def body(c, xi):
        c = jnp.tanh(c @ w + xi)  # the recurrent product
        return c, jnp.sum(c)

    c, ys = lax.scan(body, jnp.zeros(w.shape[0], x.dtype), x)
    return {"probs": jax.nn.softmax(c * 8.0), "sums": ys}


def _args() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(0, 1, (12, 8)).astype(np.float32), rng.normal(0, 0.3, (8, 8)).astype(np.float32)


def _line(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_scan_matmul_softmax_function_audits_on_five_chips_with_source_lines() -> None:
    audit = hwbench.audit(solver, *_args(), devices=FIVE, progress="none")
    protocol = audit.protocols[0]
    assert protocol.protocol == "jax-function" and len(protocol.candidates) == 5
    assert [f"{c.device}:{c.mode}" for c in protocol.candidates] == [
        "groq:default", "a100:tensorrt", "h100:fp8-e4m3", "tpu-v3:default", "ipu:fp16-sr",
    ]  # fmt: skip
    product = f"test_function_audit.py:{_line(solver, 'the recurrent product')} (solver.<locals>.body)"
    for cand in protocol.candidates:
        assert cand.execution == "emulated" and cand.verdict.value == "WARN"  # above the fp32 floor, no tolerance
        sources = {n.source for n in cand.nodes}
        assert product in sources
        first = next(n for n in cand.nodes if n.name == cand.first_divergent_node)
        assert first.above_floor and first.source.startswith("test_function_audit.py:")
    groq = protocol.candidates[0]
    first = next(n for n in groq.nodes if n.name == groq.first_divergent_node)
    assert (first.op_type, first.source) == ("dot_general", product)
    assert groq.mechanism == "matrix-unit inputs rounded to fp16 (10 fraction bits)"
    sentence = f"{product} dot_general: {first.max_ulps:.3g} ulp of fp32 on groq, first above the floor"
    assert any(r.startswith(sentence) for r in protocol.verdicts[0].reasons)  # the verdict says where it grows
    per_iteration = next(n for n in groq.nodes if n.op_type == "tanh")
    assert per_iteration.elements == 12 * 8  # a loop body's equation, kept at every iteration
    assert set(groq.outputs) == {"out['probs']", "out['sums']"}
    assert AuditReport.model_validate_json(audit.to_json()).protocols[0].candidates[2].device == "h100"
    assert "jax-function solver" in audit._repr_html_()  # a notebook shows it as any audit


def test_tolerances_decide_the_verdict() -> None:
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    loose = hwbench.audit(lambda v: jnp.exp(v) * 3.0, x, devices=["groq", "a100"], rtol=1e-3, progress="none")
    assert [v.verdict.value for v in loose.protocols[0].verdicts] == ["PASS", "PASS"]
    tight = hwbench.audit(lambda v: jnp.exp(v) * 3.0, x, devices=["groq", "a100"], rtol=1e-5, progress="none")
    groq, a100 = tight.protocols[0].verdicts
    assert (groq.verdict.value, a100.verdict.value) == ("FAIL", "PASS")
    assert "elements beyond atol 0 + rtol 1e-05 x |ref|; worst at [63]" in groq.reasons[0]
    assert any("exp: " in r and "(reduced-precision exp: computed in groq-reduced" in r for r in groq.reasons)
    by_ulps = hwbench.audit(lambda v: jnp.exp(v) * 3.0, x, devices="a100", ulps=4, progress="none")
    assert by_ulps.verdict.value == "PASS"


def test_mechanisms_saturation_and_fp8_range() -> None:
    big = np.array([10.0, 50.0, 100.0], np.float32)
    sat = hwbench.audit(lambda v: jnp.exp(v * 2.0), big, devices="groq", progress="none").protocols[0].candidates[0]
    assert sat.mechanism is not None  # e^100, e^200: beyond fp32, held at the largest value
    assert sat.mechanism.startswith("saturated: 2 values held at groq-reduced-fp32-m10's largest finite value")
    x = np.full((4, 16), 600.0, np.float32)  # beyond fp8-e4m3's 448, but per-tensor scaling brings it in
    w = np.eye(16, dtype=np.float32)
    fp8 = hwbench.audit(lambda a: a @ w, x, devices="h100:fp8-e4m3", progress="none").protocols[0].candidates[0]
    assert fp8.verdict.value == "PASS"
    x[0, 0] = 6e8  # an outlier: the scaled tensor's other values fall below fp8's smallest subnormal
    audited = hwbench.audit(lambda a: a @ w, x, devices="h100:fp8-e4m3", rtol=0.1, atol=1e-3, progress="none")
    fp8 = audited.protocols[0].candidates[0]
    assert fp8.verdict.value == "FAIL"
    assert fp8.mechanism is not None and fp8.mechanism.startswith("fp8 range: 63 operand values more than 229376x")


def test_run_returns_the_functions_tree_as_the_device_computes_it() -> None:
    x, w = _args()
    on_cpu = hwbench.run(solver, x, w, device="cpu")
    plain = jax.jit(solver)(x, w)
    assert set(on_cpu) == {"probs", "sums"}
    np.testing.assert_allclose(on_cpu["probs"], np.asarray(plain["probs"]), rtol=1e-5, atol=1e-7)
    on_groq = hwbench.run(solver, x, w, device="groq")
    assert on_groq["probs"].dtype == np.float32 and not np.array_equal(on_groq["probs"], on_cpu["probs"])
    v = np.array([1.0 + 2.0**-20], np.float32)
    assert hwbench.run(lambda a: jnp.exp(a), v, device="groq")[0] == np.float32(2.71875)  # 10 fraction bits


def test_bad_input_is_one_usage_error() -> None:
    x = np.ones(3, np.float32)
    with pytest.raises(UsageError, match="has no floating-point arithmetic to run a function on"):
        hwbench.audit(jnp.sin, x, devices=["groq", "loihi"], progress="none")
    with pytest.raises(UsageError, match="has no floating-point arithmetic"):
        hwbench.run(jnp.sin, x, device="spinnaker")

    def branchy(v):
        if v.sum() > 0:  # Python control flow on a traced value
            return v
        return -v

    with pytest.raises(UsageError, match=rf"branchy is not traceable.*test_function_audit.py:{_line(branchy, 'if v')}"):
        hwbench.audit(branchy, x, devices="groq", progress="none")
    with pytest.raises(UsageError, match=r"primitive 'fft' at test_function_audit.py:\d+ .* is not supported"):
        hwbench.run(lambda v: jnp.fft.fft(v).real, x, device="groq")
    with pytest.raises(UsageError, match="argument leaf 0 is a str"):
        hwbench.audit(jnp.sin, "x", devices="groq", progress="none")
    with pytest.raises(UsageError, match="rtol must be a finite number >= 0"):
        hwbench.audit(jnp.sin, x, devices="groq", rtol=-1.0, progress="none")
    with pytest.raises(UsageError, match="give at least one device"):
        hwbench.audit(jnp.sin, x, devices=[], progress="none")
    with pytest.raises(UsageError, match="needs the device"):
        hwbench.run(jnp.sin, x)
    with pytest.raises(UsageError, match="scatter-add is supported along one axis"):
        hwbench.run(lambda v: jnp.zeros((3, 3)).at[np.array([0, 1]), np.array([1, 2])].add(v[:2]), x, device="groq")


def test_the_kernel_route_is_unchanged() -> None:
    with pytest.raises(UsageError, match="unknown kernel"):
        hwbench.audit("groq", kernel="no-such-kernel", quick=True)
