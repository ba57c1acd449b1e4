"""The DL primitives' audit protocol on the audit engine (registered by :mod:`.protocol`).

Per input distribution: the fp64 gold, the CPU fp32 reference (the floor) and every candidate
on the same seeded inputs; each output element against the gold and its error bound
(:mod:`hwbench.plugins.kernels.dl.audit` holds the bounds and rules, docs/dl-primitives.md the
rationale). Options (``AuditSettings.options``): ``config`` (a named configuration, e.g.
``gemm_k4``) and ``dists`` (input distributions; default all).
"""

from __future__ import annotations

import time
from typing import Any, Literal

import numpy as np

from hwbench.accuracy.dl_bounds import BoundModel, bound_model, elementwise_model
from hwbench.accuracy.numerics.native_parts import native_parts
from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.accuracy.run_metrics import AuditRun, kernel_metrics
from hwbench.core.audit_protocol import AuditContext, AuditProtocol, Candidate, Compared, ProtocolInfo
from hwbench.core.audit_report import CandidateVerdict, ProtocolReport, RunSummary, combine
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, Workload
from hwbench.plugins.devices.arithmetic import ops_wrapper
from hwbench.plugins.kernels.dl import execute
from hwbench.plugins.kernels.dl.audit import (
    AUDIT_BATCH,
    AUDIT_CONFIG,
    DEFAULT_DEVICES,
    QUICK_DIMS,
    DLCandidate,
    candidate_profile,
    compare,
    judge,
    output_of,
    resolve_candidates,
)
from hwbench.plugins.kernels.dl.inputs import DISTRIBUTIONS
from hwbench.plugins.kernels.dl.kernels import DLKernel, dl_protocol_refusal

NAME = "dl-primitives"

INFO = ProtocolInfo(
    name=NAME,
    summary="every output element of a DL primitive against the fp64 gold, within its error bound",
    applies_to="the DL primitives (GEMM, Conv2D and its backward pass, ReLU, LSTM)",
    runs=["gold: numpy fp64", "reference: CPU fp32 (the floor)", "candidate: each device mode (emulated)"],
    compares=[
        Compared(header="max rel", path="deviation.max_rel"),
        Compared(header="normwise", path="deviation.normwise_rel"),
        Compared(header="mean err", path="deviation.mean_signed_rel"),
        Compared(header="/det bound", path="deviation.max_over_det"),
        Compared(header="/sqrt(K)u", path="deviation.max_over_prob"),
        Compared(header="beyond", path="deviation.beyond_det"),
    ],
    floor="the CPU fp32 reference's errors against the gold (reported; the bound is the criterion)",
    verdict="an element beyond its format's deterministic bound, or non-finite, is a FAIL naming the element; "
    "else PASS with the worst ratio to the bound (docs/dl-primitives.md)",
    forensics="the worst element: its index, value, gold, error and bound",
    sources=["Higham, Accuracy and Stability of Numerical Algorithms (2002), gamma_K bounds; docs/dl-primitives.md"],
)


class DLProtocol(AuditProtocol):
    """The elementwise protocol, one report per input distribution."""

    info = INFO

    def refusal(self, kernel: Kernel) -> str | None:
        return dl_protocol_refusal(kernel)

    def dists(self, ctx: AuditContext) -> tuple[str, ...]:
        dists = tuple(ctx.settings.options.get("dists") or DISTRIBUTIONS)
        for d in dists:
            if d not in DISTRIBUTIONS:
                raise UsageError(f"unknown input distribution '{d}'; choose from: {', '.join(DISTRIBUTIONS)}")
        return dists

    def candidates(self, ctx: AuditContext) -> list[DLCandidate]:
        """NAME:MODE as given; a bare NAME means every mode, plus nearest-rounding twins of SR modes."""
        out: list[DLCandidate] = []
        for c in ctx.candidates or [Candidate(d) for d in DEFAULT_DEVICES]:
            if c.profile_path:
                raise UsageError(
                    "--profile: the dl-primitives protocol takes device modes and --set, not a profile file"
                )
            spec = f"{c.device}:{c.mode}" if c.mode else c.device
            found = resolve_candidates(ctx.registry, (spec,), {} if c.profile is not None else dict(c.overrides))
            for cand in found:
                cand.profile = c.profile
            out += found
        return out

    def preflight(self, ctx: AuditContext) -> None:
        kernel = ctx.kernel
        assert isinstance(kernel, DLKernel)
        if ctx.settings.options.get("config"):
            kernel.shape(ctx.settings.options["config"])  # an unknown configuration fails now
        self.dists(ctx)
        self.candidates(ctx)

    def planned_runs(self, ctx: AuditContext) -> list[tuple[str, float]]:
        labels = ["cpu fp32 reference", *[c.label for c in self.candidates(ctx)]]
        return [(f"{NAME} {d}: {lab}", 1.0) for d in self.dists(ctx) for lab in labels]

    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        candidates = self.candidates(ctx)
        return [_Distribution(ctx, dist).report(candidates) for dist in self.dists(ctx)]


class _Distribution:
    """The protocol on one input distribution."""

    def __init__(self, ctx: AuditContext, dist: str) -> None:
        kernel = ctx.kernel
        assert isinstance(kernel, DLKernel)
        self.ctx, self.kernel, self.dist = ctx, kernel, dist
        self.workload = self._workload()

    def _workload(self) -> Workload:
        s, k = self.ctx.settings, self.kernel
        config = s.options.get("config") or AUDIT_CONFIG[k.name]
        batch = AUDIT_BATCH[k.name][1 if s.quick else 0]
        full = k.shape(config).batch
        dims = QUICK_DIMS.get(k.name, {}) if s.quick else {}
        return k.make_workload(
            min(batch, full), config=config, dist=self.dist, seed=s.seed, scaled_from=full if batch < full else None,
            **dims,
        )  # fmt: skip

    def _execute(self, workload: Workload, dtype: str, wrapper: Any = None) -> tuple[np.ndarray, float]:
        """The judged output and the wall time of the call."""
        t0 = time.perf_counter()
        out = output_of(execute.runner(self.kernel, workload, "numpy", dtype, wrapper)())
        return out, time.perf_counter() - t0

    def _baseline(self) -> dict[str, Any]:
        """The fp64 gold and |A||B| gold (the engine's one baseline path; they depend on no candidate)."""
        wl = self.workload
        gold = self._execute(wl, "float64")[0]
        absgold = None
        if self.kernel.name != "lstm":
            arrays = {k: np.abs(v) for k, v in wl.arrays.items()}
            absgold = self._execute(Workload(wl.kernel, wl.size, wl.meta, wl.params, arrays, wl.state0), "float64")[0]
        return {"gold": gold, "absgold": absgold}

    def _run(
        self, label: str, role: Literal["reference", "candidate"], cand: DLCandidate, profile: NumericsProfile | None,
        base: dict[str, Any], criterion: NumericsProfile | None = None,
    ) -> tuple[RunSummary, dict[str, Any]]:  # fmt: skip
        """One run judged against the error bound of ``criterion`` (default: the profile it runs)."""
        name = f"{NAME} {self.dist}: {label}"
        dtype = profile.carrier if profile is not None else "float32"
        wrapper = ops_wrapper(profile, self.ctx.settings.seed) if role == "candidate" else None
        out, secs = self._execute(self.workload, dtype, wrapper)
        self.ctx.tick(name, 1.0, 1.0)
        model = self._model(profile if criterion is None else criterion)
        metrics = compare(out, base["gold"], base["absgold"], model)
        metrics["bound"] = None if model is None else model.derivation
        if criterion is not None:
            metrics["bound_of"] = criterion.name  # the device's own format, not the profile that ran
        if role == "candidate":
            from hwbench.plugins.devices._matrix_unit_ops import matmul_method

            metrics["matmul"] = matmul_method(profile)
        execution: Literal["real", "emulated"] = "emulated" if role == "candidate" and cand.device != "cpu" else "real"
        device = self.ctx.registry.device(cand.device)
        own = kernel_metrics(self.ctx.registry, self.kernel, self.workload, device,
                             AuditRun(execution, "numpy", secs, 0.0, 1))  # fmt: skip
        summary = RunSummary(
            label=label, role=role, device=cand.device, mode=cand.mode,
            execution=execution, engine="numpy", profile=None if profile is None else profile.name, setup_s=0.0,
            run_s=secs, deviation=metrics, metrics=own,
            native=native_parts(profile) if execution == "emulated" and profile is not None else [],
        )  # fmt: skip
        return summary, metrics

    def _criterion(self, cand: DLCandidate) -> NumericsProfile | None:
        """A profile built for this audit (a sweep cell's: one op class at another width) is judged
        against the bound of the device mode's own profile, so a sweep answers which widths keep a
        primitive within the error its device's format promises; None: the profile's own bound."""
        if cand.profile is None:
            return None
        own: NumericsProfile | None = self.ctx.registry.device(cand.device).numerics(cand.mode)
        return own

    def _model(self, profile: NumericsProfile | None) -> BoundModel | None:
        k = self.kernel.reduction_length(self.workload)
        if k is None:
            return None
        return elementwise_model(profile) if self.kernel.name == "relu" else bound_model(profile, k)

    def report(self, candidates: list[DLCandidate]) -> ProtocolReport:
        s, wl = self.ctx.settings, self.workload
        key = (NAME, self.kernel.name, s.options.get("config"), s.quick, s.seed, self.dist)
        base = self.ctx.baseline(key, self._baseline)
        floor_run, fm = self._run("cpu fp32 reference", "reference", DLCandidate("cpu", "fp32"), None, base)
        runs, verdicts = [floor_run], []
        for cand in candidates:
            profile = candidate_profile(self.ctx.registry, cand)
            criterion = self._criterion(cand)
            summary, metrics = self._run(cand.label, "candidate", cand, profile, base, criterion)
            j = judge(metrics, base["absgold"] is not None)
            summary.violation = j.violation
            runs.append(summary)
            mode = cand.mode + (" (SR->nearest)" if cand.nearest else "")
            verdicts.append(CandidateVerdict(device=cand.device, mode=mode, verdict=j.verdict, score=j.score,
                                             reasons=j.reasons))  # fmt: skip
        shape = ", ".join(f"{k}={v}" for k, v in wl.meta["shape"].items())
        scaled = wl.meta["batch_scaled_from"]
        return ProtocolReport(
            name=f"dl-{self.kernel.name} {self.dist}",
            protocol=NAME,
            description=f"{self.kernel.name} {wl.meta['config']} ({shape}), {self.dist} inputs, every output "
            "element vs the fp64 gold",
            reduced=None
            if scaled is None
            else f"batch {self.kernel.shape_of(wl).batch} of {scaled} (reduction length kept)",
            probe_unit="",
            sample_ms=0.0,
            regime="bound" if base["absgold"] is not None else "no-bound",
            floor={k: fm[k] for k in ("max_rel", "normwise_rel", "max_over_det") if k in fm},
            runs=runs,
            verdicts=verdicts,
            verdict=combine([v.verdict for v in verdicts]),
        )
