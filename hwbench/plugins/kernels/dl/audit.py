"""The DL-primitives accuracy protocol: every output element against the fp64 gold, judged by bounds.

For GEMM / Conv2D / ReLU / LSTM (docs/dl-primitives.md): the same seeded inputs (float32
values) go to the numpy fp64 gold, the CPU fp32 reference (the floor) and every candidate
device emulated with its numerics profile. Per output element: relative error, and error as a
fraction of the profile's deterministic bound ``c_det(K) (|A||B|)_ij`` and probabilistic bound
``c_prob(K) (|A||B|)_ij`` (:mod:`hwbench.accuracy.dl_bounds`). Verdict rules (docs/dl-primitives.md):
an element beyond its format's deterministic bound, or non-finite, is a hard-check failure —
FAIL, naming the element (the same rule as the io-ehh audit's hard checks: a violation is a
FAIL whatever the floor); otherwise PASS with the worst ratio to the bound as score. The LSTM
has no elementwise bound (a nonlinear recurrence): its errors are reported, only non-finite
outputs fail. :class:`hwbench.plugins.kernels.dl.protocol.DLProtocol` runs it on the audit engine;
this module holds its candidates, bounds and rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hwbench.accuracy.dl_bounds import BoundModel
from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.accuracy.verdict import Verdict
from hwbench.core.errors import UsageError
from hwbench.core.plugins import Registry
from hwbench.plugins.devices.arithmetic import FLOAT_KINDS

DEFAULT_DEVICES = ("a100", "tpu-v3", "ipu", "groq")
# Audit shapes: the named configuration with the batch reduced (quick: more), K kept in full.
AUDIT_CONFIG = {"gemm": "gemm_k1", "conv2d": "conv_k2", "conv2d-bw": "conv_k2", "relu": "relu_k1", "lstm": "rnn_k1"}
AUDIT_BATCH = {"gemm": (1760, 128), "conv2d": (4, 1), "conv2d-bw": (4, 1), "relu": (64, 8), "lstm": (16, 4)}
# --quick: the LSTM's first 10 time steps (every step is a Python-level call); shape overrides
QUICK_DIMS: dict[str, dict[str, Any]] = {"lstm": {"s": 10}}


@dataclass
class DLCandidate:
    """A device mode; ``nearest`` replaces its stochastic rounding by nearest-even (a derived variant)."""

    device: str
    mode: str
    nearest: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)
    profile: Any = None  # a NumericsProfile built in memory (a sweep cell's); wins over ``overrides``

    @property
    def label(self) -> str:
        return f"{self.device}:{self.mode}" + (" (SR->nearest)" if self.nearest else "")


def resolve_candidates(registry: Registry, specs: tuple[str, ...], overrides: dict[str, Any]) -> list[DLCandidate]:
    """NAME:MODE as given; a bare NAME means every mode, plus nearest-rounding twins of SR modes."""
    out: list[DLCandidate] = []
    for spec in specs or DEFAULT_DEVICES:
        name, _, mode = spec.partition(":")
        device = registry.device(name)
        if device.spec.kind not in FLOAT_KINDS:
            takes = sorted(n for n in registry.devices if registry.device(n).spec.kind in FLOAT_KINDS)
            raise UsageError(
                f"device '{name}' ({device.spec.kind}) has no floating-point matrix unit to audit DL "
                f"primitives on; choose a device of kind {', '.join(FLOAT_KINDS)}: {', '.join(takes)}"
            )
        out.extend(_device_candidates(registry, name, [mode] if mode else list(device.modes), bool(mode), overrides))
    return out


def _device_candidates(
    registry: Registry, name: str, modes: list[str], explicit: bool, overrides: dict[str, Any]
) -> list[DLCandidate]:
    """Candidates of one device. With a bare NAME, modes that do not take the ``--set`` keys are
    left out (a parameter exists for some modes only); if none takes them, the error stands."""
    out: list[DLCandidate] = []
    first_error: UsageError | None = None
    for m in modes:
        try:
            profile = candidate_profile(registry, DLCandidate(name, m, overrides=overrides))
        except UsageError as exc:
            if explicit or not overrides:
                raise
            first_error = first_error or exc
            continue
        out.append(DLCandidate(name, m, overrides=overrides))
        if not explicit and profile is not None and _stochastic(profile):
            out.append(DLCandidate(name, m, nearest=True, overrides=overrides))
    if not out and first_error is not None:
        raise first_error
    return out


def _stochastic(profile: NumericsProfile) -> bool:
    return any(op.rounding is RoundingMode.STOCHASTIC for op in profile.ops.values())


def candidate_profile(registry: Registry, cand: DLCandidate) -> NumericsProfile | None:
    device = registry.device(cand.device)
    if cand.mode not in device.modes:
        choices = ", ".join(device.modes)
        raise UsageError(f"unknown mode '{cand.mode}' of device '{cand.device}'; choose from: {choices}")
    profile: NumericsProfile | None
    if cand.profile is not None:
        profile = cand.profile
    else:
        profile = device.numerics(cand.mode, cand.overrides) if cand.overrides else device.numerics(cand.mode)
    if profile is None or not cand.nearest:
        return profile
    ops = {
        c: (
            op.model_copy(update={"rounding": RoundingMode.NEAREST_EVEN})
            if op.rounding is RoundingMode.STOCHASTIC
            else op
        )
        for c, op in profile.ops.items()
    }
    return profile.model_copy(update={"ops": ops, "name": profile.name + "-nearest"})


def output_of(state: Any) -> np.ndarray:
    """The judged output: the state (LSTM: the last hidden state h), as float64."""
    return np.asarray(state[0] if isinstance(state, tuple) else state, dtype=np.float64)


def compare(out: np.ndarray, gold: np.ndarray, absgold: np.ndarray | None, model: BoundModel | None) -> dict[str, Any]:
    """Per-element errors summarised, and the worst element against the deterministic bound."""
    err = np.abs(out - gold)
    finite = np.isfinite(out)
    err = np.where(finite, err, np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(gold != 0, err / np.abs(gold), np.where(err == 0, 0.0, np.inf))
        m: dict[str, Any] = {
            "elements": int(out.size),
            "nonfinite": int((~finite).sum()),
            "max_rel": float(rel.max()),
            "median_rel": float(np.median(rel)),
            "normwise_rel": float(err.max() / max(np.abs(gold).max(), np.finfo(float).tiny)),
            "mean_signed_rel": _mean_signed_rel(out, gold, finite),
        }
        if absgold is None or model is None:
            return m
        if not np.isfinite(model.deterministic):  # K u >= 1: gamma_K does not exist
            m["max_over_prob"] = float(np.max(np.where(absgold > 0, err / (model.probabilistic * absgold), 0.0)))
            return m
        det = model.deterministic * absgold
        ratio = np.where(det > 0, err / det, np.where(err == 0, 0.0, np.inf))
        prob = np.where(det > 0, err / (model.probabilistic * absgold), ratio)
    worst = int(np.argmax(ratio))
    idx = [int(i) for i in np.unravel_index(worst, out.shape)]
    m.update(
        {
            "max_over_det": float(ratio.max()),
            "median_over_det": float(np.median(ratio)),
            "max_over_prob": float(prob.max()),
            "median_over_prob": float(np.median(prob)),
            "beyond_det": int((ratio > 1).sum()),
            "worst": {
                "index": idx,
                "value": float(out.flat[worst]),
                "gold": float(gold.flat[worst]),
                "error": float(err.flat[worst]),
                "bound": float(det.flat[worst]),
                "ratio": float(ratio.flat[worst]),
            },
        }
    )
    return m


def _mean_signed_rel(out: np.ndarray, gold: np.ndarray, finite: np.ndarray) -> float:
    """Mean of (out - gold) / |gold| over finite outputs with gold != 0: a bias, not a size.

    Errors of round-to-nearest cancel in it; round-toward-zero accumulation (tensor cores) leaves
    it negative on positive data, which no max / median statistic shows."""
    ok = finite & (gold != 0)
    if not ok.any():
        return 0.0
    return float(np.mean((out[ok] - gold[ok]) / np.abs(gold[ok])))


@dataclass
class Judgement:
    verdict: Verdict
    score: float
    reasons: list[str]
    violation: dict[str, Any] | None = None


def judge(metrics: dict[str, Any], has_bound: bool) -> Judgement:
    """FAIL on an element beyond the deterministic bound (or non-finite), naming it; else PASS."""
    if metrics["nonfinite"]:
        v = {"kind": "non-finite output", "explanation": f"{metrics['nonfinite']} non-finite output elements"}
        return Judgement(Verdict.FAIL, float("inf"), [f"hard check failed: {v['explanation']}"], v)
    if not has_bound or "worst" not in metrics:
        why = "no elementwise bound for this kernel" if not has_bound else "no deterministic bound (K u_acc >= 1)"
        return Judgement(
            Verdict.PASS,
            metrics["max_rel"],
            [f"{why}; max rel. error {metrics['max_rel']:.3g}, normwise {metrics['normwise_rel']:.3g}"],
        )
    w = metrics["worst"]
    if metrics["beyond_det"]:
        text = (
            f"{metrics['beyond_det']} element(s) beyond the deterministic bound; worst {tuple(w['index'])} = "
            f"{w['value']:.9g} (gold {w['gold']:.9g}): |error| {w['error']:.3g} > bound {w['bound']:.3g} "
            f"({w['ratio']:.3g}x)"
        )
        return Judgement(
            Verdict.FAIL,
            metrics["max_over_det"],
            [f"hard check failed: {text}"],
            {"kind": "bound", **w, "explanation": text},
        )
    return Judgement(
        Verdict.PASS,
        metrics["max_over_det"],
        [
            f"every element within its deterministic bound (worst {metrics['max_over_det']:.3g}x of it, "
            f"{metrics['max_over_prob']:.3g}x the probabilistic sqrt(K)u bound); "
            f"max rel. error {metrics['max_rel']:.3g}"
        ],
    )
