"""The judging both audits share (a model's and a function's): the verdict on outputs against the
float64 reference, the fp32 floor and the user's tolerances, and the mechanism named at a node."""

from __future__ import annotations

import numpy as np
import pytest

from hwbench.accuracy.numerics.formats import float_format
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.audit_report import Verdict
from hwbench.core.errors import UsageError
from hwbench.core.ops import OpClass
from hwbench.evaluator.judge import Criteria, judge, output_error
from hwbench.evaluator.mechanism import mechanism

REF = {"y": np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])}
FLOOR = [{"y": REF["y"].astype(np.float32)}]


def _profile(**ops: object) -> NumericsProfile:
    entries = {
        OpClass(k): OpNumerics(format=v, source="assumption: test profile", confidence=Confidence.ASSUMED)
        for k, v in ops.items()
    }
    return NumericsProfile(name="test", device="test", mode="test", carrier="float32", ops=entries)


def test_verdicts_follow_their_rules_in_order() -> None:
    same = judge({"y": REF["y"].astype(np.float32)}, REF, FLOOR, Criteria())
    assert same.verdict is Verdict.PASS and same.reasons == ["every output within the fp32 floor"]
    off = {"y": REF["y"] * (1 + 1e-4)}
    assert judge(off, REF, FLOOR, Criteria()).verdict is Verdict.WARN  # above the floor, no tolerance given
    assert judge(off, REF, FLOOR, Criteria(rtol=1e-3)).verdict is Verdict.PASS  # within the user's tolerance
    failed = judge(off, REF, FLOOR, Criteria(rtol=1e-5))
    assert failed.verdict is Verdict.FAIL
    beyond = "output y: 6 of 6 elements beyond atol 0 + rtol 1e-05 x |ref|; worst at [0, 2]: 3.0003 vs float64 3"
    assert failed.reasons[0] == beyond
    assert "above the fp32 floor" in failed.reasons[1]  # the note stays beside the FAIL
    nan = judge({"y": np.full((2, 3), np.nan)}, REF, FLOOR, Criteria())
    assert nan.verdict is Verdict.FAIL and "non-finite" in nan.reasons[0] and nan.score == np.inf


def test_a_classifier_is_judged_by_top1_where_asked() -> None:
    swapped = {"y": np.array([[1.0, 3.0, 2.0], [3.0, 2.0, 1.0]])}
    top = judge(swapped, REF, FLOOR, Criteria(top1=True, labels=np.array([2, 1])))
    assert top.verdict is Verdict.FAIL and "top-1 agrees with the reference on 1 of 2 rows" in top.reasons[0]
    assert top.outputs["y"]["accuracy"] == 0.0 and top.outputs["y"]["reference_accuracy"] == 0.5
    plain = judge(swapped, REF, FLOOR, Criteria())  # a function's 2-D output: not a classifier's by default
    assert plain.verdict is Verdict.WARN and "top1_agreement" not in plain.outputs["y"]


def test_tolerances_in_ulps_and_output_names() -> None:
    off = {"y": REF["y"] + 4 * np.spacing(REF["y"].astype(np.float32)).astype(np.float64)}
    assert judge(off, REF, FLOOR, Criteria(ulps=4), names={"y": "out['y']"}).verdict is Verdict.PASS
    failed = judge(off, REF, FLOOR, Criteria(ulps=3), names={"y": "out['y']"})
    assert failed.verdict is Verdict.FAIL and failed.reasons[0].startswith("output out['y']: 6 of 6 elements")
    assert Criteria(rtol=1e-3, ulps=3).describe() == "atol 0 + rtol 0.001 x |ref| or 3 fp32 ulps"
    with pytest.raises(UsageError, match="ulps must be a finite number >= 0"):
        Criteria(ulps=float("nan"))


def test_the_worst_element_is_a_non_finite_one_first() -> None:
    e = output_error(np.array([1.5, np.inf, 2.0]), np.array([1.0, 2.0, 2.0]))
    assert e["worst_index"] == [1] and e["worst"] == [np.inf, 2.0] and e["nonfinite"] == 1


def test_mechanisms_are_named_from_the_values_and_the_profile() -> None:
    fp16 = float_format("fp16")
    clip = fp16.model_copy(update={"name": "fp16-clip", "overflow": "saturate"})
    saturated = mechanism("Add", OpClass.ADD, _profile(add=clip), [np.array([65504.0, 1.0])], [np.array([7e4, 1.0])])
    assert saturated == "saturated: 1 values held at fp16-clip's largest finite value 65504"
    ftz = fp16.model_copy(update={"name": "fp16-ftz", "subnormals": "ftz"})
    flushed = mechanism("Mul", OpClass.MUL, _profile(mul=ftz), [np.array([0.0, 1.0])], [np.array([1e-6, 1.0])])
    assert flushed is not None and flushed.startswith("flushed subnormals: 1 values below fp16-ftz's smallest normal")
    gradual = mechanism("Mul", OpClass.MUL, _profile(mul=fp16), [np.array([0.0, 1.0])], [np.array([1e-8, 1.0])])
    assert gradual == "reduced-precision Mul: computed in fp16 (10 fraction bits)"  # fp16 underflows gradually
    e4m3 = _profile(matmul_input=float_format("fp8-e4m3fn"))
    operands = [np.array([[500.0]]), np.array([[1.0]])]
    over = mechanism("MatMul", OpClass.MATMUL_INPUT, e4m3, [np.array([np.nan])], [np.array([500.0])], operands)
    assert over is not None and over.startswith("fp8 overflow: 1 operand values beyond fp8-e4m3fn's largest")
    bad = mechanism("Exp", OpClass.EXP, None, [np.array([np.inf])], [np.array([1e30])])
    assert bad == "non-finite: 1 values became inf or NaN where the float64 reference is finite"


def test_a_layernorm_whose_mean_dwarfs_its_spread_is_named() -> None:
    x = 1000.0 + np.array([[0.01, -0.01, 0.02, -0.02]])
    zeros = [np.zeros(4)]
    cancel = mechanism("LayerNormalization", OpClass.ADD, None, zeros, zeros, normalized=x)
    assert cancel is not None and cancel.startswith("cancellation in the LayerNorm variance")
    assert "keep about 8 of 24 bits" in cancel  # |mean| / std ~ 6.3e4: 16 of fp32's 24 bits cancel
    spread = mechanism("LayerNormalization", OpClass.ADD, None, zeros, zeros, normalized=x - 1000.0)
    assert spread is None
