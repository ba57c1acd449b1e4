"""Time-stepped protocols: a scenario run by reference, gold, ensemble and candidates, judged
against the noise floor of the legitimate variants.

:class:`SteppedProtocol` is the engine's protocol for every kernel that is simulated step by step
(validation and the spike stress test, assembled in :mod:`hwbench.stress.protocols`; the
spike-train protocol of :mod:`hwbench.accuracy.spike_train` is a subclass). Every run of one
protocol sees the same scenario:
  reference  CPU fp32 (the study's reference),
  gold       CPU fp64,
  ensemble   legitimate IEEE fp32 variants: the gap-junction sum in reverse order, and the
             initial voltages moved by one fp32 ulp,
  candidate  each requested device and mode (real, or emulated per its numerics profile).
Deviations are measured against the reference; the ensemble and gold give the floor (never below
the kernel's declared absolute floors, ``AuditFacts.floors``); the verdict rules live in
:mod:`hwbench.accuracy.verdict`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import numpy as np

from hwbench.accuracy.checks import state_checker
from hwbench.accuracy.metrics import abs_deviation, deviation_metrics, spike_metrics, spike_steps, spike_window_mask
from hwbench.accuracy.numerics.native_parts import native_parts
from hwbench.accuracy.run_metrics import Reports, run_metrics
from hwbench.accuracy.verdict import floor, judge, regime
from hwbench.core.audit_protocol import AuditContext, AuditProtocol, AuditSettings, Candidate, ProtocolInfo
from hwbench.core.audit_report import CandidateVerdict, ProtocolReport, Role, RunSummary, combine
from hwbench.core.device import Device, RunRequest, numerics_with_overrides
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, KernelInfo, Workload
from hwbench.core.layout import pass_major_order
from hwbench.core.protocol_facts import CONTRACT2_FLOORS
from hwbench.core.run_slots import RunSlots, SlotsClosed
from hwbench.core.runner import resolve_mode
from hwbench.core.scenario import Scenario, Trace, run_scenario

T = TypeVar("T")

BASE_RUNS = ("reference", "gold (CPU fp64)", "ensemble: reversed order", "ensemble: +1 ulp V0")


@dataclass(frozen=True)
class Resolved:
    """A candidate with its device record, its mode and the profile it runs (None: the device's own)."""

    candidate: Candidate
    device: Device
    mode: str
    profile: Any = None


@dataclass
class Job:
    """One run of a protocol: who runs what, in which role."""

    label: str
    role: Role
    device: Device
    mode: str
    workload: Workload
    scenario: Scenario
    profile: Any = None
    engine: str | None = None
    sample_every: int | None = None
    refine: int = 1

    def executor_key(self) -> tuple[Any, ...]:
        """Jobs with equal keys compile to the same program (only the initial state differs)."""
        profile = None if self.profile is None else self.profile.to_json()
        return (
            self.device.name,
            self.mode,
            profile,
            self.engine,
            self.sample_every,
            id(self.workload.params),
            id(self.workload.arrays),
        )


@dataclass
class ProtocolData:
    """In-memory traces kept for the plots (the JSON report keeps summaries)."""

    scenario: Scenario
    probe: str = "probe"  # what the traces hold (the kernel's probe) ...
    sample_ms: float = 1.0  # ... sampled every this many ms
    deviation_label: str = "max over cells |deviation| outside spikes"  # what ``deviations`` hold, per sample
    traces: dict[str, Trace] = field(default_factory=dict)
    deviations: dict[str, np.ndarray] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)


ScenarioFactory = Callable[[AuditSettings, KernelInfo], Scenario]  # a protocol's scenario for a kernel
Refiner = Callable[[Job, Kernel, int], Job]  # the candidate's job at dt/k
Forensics = Callable[[Job, Kernel, Trace], "dict[str, Any] | None"]  # locate a violation in a trace


def reversed_sum_order(workload: Workload) -> Workload:
    """The same network with each cell's incoming connections listed in reverse order (a legitimate
    reordering of the sums). A kernel without a connection list has no such variant: the member is
    then the reference workload itself, and says so."""
    if "src" not in workload.arrays or "tgt" not in workload.arrays:
        return replace(workload, meta={**workload.meta, "variant": "no connection list: same as the reference"})
    src, tgt = workload.arrays["src"], workload.arrays["tgt"]
    order = np.lexsort((-np.arange(tgt.size), tgt))
    order = order[pass_major_order(tgt[order], workload.size)]  # the layout engines sum fastest
    arrays = {**workload.arrays, "src": src[order], "tgt": tgt[order]}
    return replace(workload, meta={**workload.meta, "variant": "reversed gap-junction order"}, arrays=arrays)


def perturbed_voltages(workload: Workload, rows: list[int]) -> Workload:
    """The same network with the initial values of ``rows`` (the kernel's voltages: rows of a 2-D
    state, or components of a state tuple) moved up by one fp32 ulp."""

    def nudge(values: Any) -> np.ndarray:
        v32 = np.asarray(values, dtype=np.float32)
        return np.nextafter(v32, np.float32(np.inf)).astype(np.float64)

    if isinstance(workload.state0, (tuple, list)):
        parts = [nudge(s) if i in rows else np.array(s, copy=True) for i, s in enumerate(workload.state0)]
        state: Any = type(workload.state0)(parts)
    else:
        state = np.array(workload.state0, dtype=np.float64, copy=True)
        for r in rows:
            state[r] = nudge(state[r])
    return replace(workload, meta={**workload.meta, "variant": "initial V + 1 ulp (fp32)"}, state0=state)


def declared_in_facts(name: str) -> Callable[[KernelInfo], str | None]:
    """The refusal rule of a protocol whose facts the kernel declares in ``KernelInfo.audit``."""

    def refusal(info: KernelInfo) -> str | None:
        return None if info.audit.facts(name) is not None else info.audit.reason(name)

    return refusal


class SteppedProtocol(AuditProtocol):
    """A time-stepped protocol: ``scenario`` builds what to simulate from the kernel's record;
    ``refine`` (with ``settings.dt_refine``) adds the candidate at dt/k, ``forensics`` locates a
    hard-check violation to its step. Both are optional: without them the runs are judged as
    they are. ``applies`` decides which kernels it audits (default: those that declare its facts)."""

    def __init__(
        self,
        info: ProtocolInfo,
        scenario: ScenarioFactory,
        *,
        refine: Refiner | None = None,
        forensics: Forensics | None = None,
        applies: Callable[[KernelInfo], str | None] | None = None,
    ) -> None:
        self.info = info
        self.scenario_of = scenario
        self.refine = refine
        self.forensics = forensics
        self.applies = applies or declared_in_facts(info.name)

    def refusal(self, kernel: Kernel) -> str | None:
        return self.applies(kernel.info)

    def scenario(self, ctx: AuditContext) -> Scenario:
        return self.scenario_of(ctx.settings, ctx.kernel.info)

    def refining(self, settings: AuditSettings) -> bool:
        return settings.dt_refine and self.refine is not None

    # --- before the runs ---------------------------------------------------------------------
    def preflight(self, ctx: AuditContext) -> None:
        """Resolve every candidate and refuse, before minutes of reference runs, what cannot run."""
        if not ctx.candidates:
            raise UsageError("give at least one --device NAME[:MODE] to audit")
        ctx.registry.device("cpu")  # the reference: refused now if disabled, not after the progress bars
        resolved = [resolve(ctx, c) for c in ctx.candidates]
        scenario = self.scenario(ctx)
        kernel = ctx.registry.kernel(scenario.kernel)
        if self.refining(ctx.settings) and kernel.info.dt_param is None:
            raise UsageError(
                f"--dt-refine: kernel '{kernel.name}' of protocol '{self.name}' is discrete-time (no dt parameter)"
            )
        workload = scenario.make_workload(kernel)
        for r in resolved:
            support = r.device.supports(kernel, workload, mode=r.mode)
            if not support.ok:
                raise UnavailableError(
                    f"device '{r.device.name}' [{r.mode}] cannot run the {self.name} protocol "
                    f"({workload.size} cells): {support.reason}"
                )

    def planned_runs(self, ctx: AuditContext) -> list[tuple[str, float]]:
        """(label, biological ms) of every run, for progress bars (labels as the runs report them)."""
        labels = list(BASE_RUNS)
        for c in ctx.candidates:
            mode = c.mode or ctx.registry.device(c.device).default_mode
            label = cand_label(c.device, mode)
            labels.append(label)
            if self.refining(ctx.settings):
                labels += [f"{label} dt/{k}" for k in ctx.settings.refine_factors]
        total = self.scenario(ctx).total_ms
        return [(f"{self.name}: {lab}", total) for lab in labels]

    # --- the protocol ------------------------------------------------------------------------
    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        """Run the jobs and judge every candidate against the floor of the ensemble."""
        scenario = self.scenario(ctx)
        kernel = ctx.registry.kernel(scenario.kernel)
        resolved = [resolve(ctx, c) for c in ctx.candidates]
        data = ProtocolData(scenario, kernel.info.probe, (kernel.info.dt_ms or 1.0) * kernel.info.sample_every)
        ctx.data[self.name] = data
        jobs = self._jobs(ctx, scenario, kernel, resolved)
        traces = self._traces(ctx, scenario, kernel, jobs)
        compared = self._compare_all(ctx, kernel, jobs, traces, data)
        return [self.report(ctx, scenario, kernel, jobs, traces, compared)]

    def report(
        self,
        ctx: AuditContext,
        scenario: Scenario,
        kernel: Kernel,
        jobs: list[Job],
        traces: dict[str, Trace],
        compared: dict[str, dict[str, Any]],
    ) -> ProtocolReport:
        """Floor, regime and verdicts (the deviation-and-spikes rules of :mod:`hwbench.accuracy.verdict`)."""
        floors = kernel.info.audit.floors or CONTRACT2_FLOORS
        ensemble = [compared[j.label] for j in jobs if j.role == "ensemble"]
        regime_name = regime(ensemble, floors.stable_spread)
        floor_values = floor([compared[j.label] for j in jobs if j.role in ("gold", "ensemble")], floors.minimum())
        unit = kernel.info.probe_unit
        judged = [job for job in jobs if job.role in ("candidate", "dt-refine")]
        verdicts = []
        for job in judged:
            verdict, score, reasons = judge(compared[job.label], traces[job.label].violation, floor_values,
                                            regime_name, unit)  # fmt: skip
            verdicts.append(verdict_of(job, verdict, score, reasons))
        return self.protocol_report(scenario, kernel, jobs, traces, compared, regime_name, floor_values, verdicts)

    def protocol_report(
        self,
        scenario: Scenario,
        kernel: Kernel,
        jobs: list[Job],
        traces: dict[str, Trace],
        compared: dict[str, dict[str, Any]],
        regime_name: str,
        floor_values: dict[str, float],
        verdicts: list[CandidateVerdict],
    ) -> ProtocolReport:
        main = [v.verdict for v, job in zip(verdicts, [j for j in jobs if j.role in ("candidate", "dt-refine")])
                if job.role == "candidate"]  # fmt: skip
        return ProtocolReport(
            name=self.name,
            protocol=self.name,
            description=scenario.description,
            reduced=scenario.reduced,
            probe_unit=kernel.info.probe_unit,
            sample_ms=(kernel.info.dt_ms or 1.0) * kernel.info.sample_every,
            regime=regime_name,
            floor=floor_values,
            runs=[summary(job, traces[job.label], compared.get(job.label, {})) for job in jobs],
            verdicts=verdicts,
            verdict=combine(main),
        )

    def _jobs(self, ctx: AuditContext, scenario: Scenario, kernel: Kernel, resolved: list[Resolved]) -> list[Job]:
        """The reference, gold and ensemble runs on the CPU, then each candidate (and its dt/k runs)."""
        settings = ctx.settings
        workload = scenario.make_workload(kernel)
        engine = settings.engine
        reordered = reversed_sum_order(workload)
        nudged = perturbed_voltages(workload, kernel.info.perturbed_rows())
        cpu_device = ctx.registry.device("cpu")
        jobs = [
            Job("reference", "reference", cpu_device, "fp32", workload, scenario, engine=engine),
            Job("gold (CPU fp64)", "gold", cpu_device, "fp64", workload, scenario, engine=engine),
            Job("ensemble: reversed order", "ensemble", cpu_device, "fp32", reordered, scenario, engine=engine),
            Job("ensemble: +1 ulp V0", "ensemble", cpu_device, "fp32", nudged, scenario, engine=engine),
        ]
        for r in resolved:
            job = Job(cand_label(r.candidate.device, r.mode), "candidate", r.device, r.mode, workload, scenario,
                      profile=r.profile)  # fmt: skip
            jobs.append(job)
            if self.refine is not None and self.refining(settings):
                jobs += [self.refine(job, kernel, k) for k in settings.refine_factors]
        return jobs

    def _traces(self, ctx: AuditContext, scenario: Scenario, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Run the jobs (candidates' violations located by ``_execute_candidates``); refuse a protocol
        whose reference fails, and add each violation's grid index."""
        traces = self._execute_all(ctx, scenario, kernel, jobs)
        ref = traces["reference"]
        if ref.violation:
            raise UnavailableError(f"the CPU fp32 reference itself failed a hard check in {self.name}: {ref.violation}")
        for job in jobs:
            trace = traces[job.label]
            if trace.violation:
                trace.violation = with_grid_index(trace.violation, job.workload)
        return traces

    def _compare_all(
        self, ctx: AuditContext, kernel: Kernel, jobs: list[Job], traces: dict[str, Trace], data: ProtocolData
    ) -> dict[str, dict[str, Any]]:
        """Every run but the reference against the reference; every run's own metrics (the kernel's)."""
        ref = traces["reference"]
        compared: dict[str, dict[str, Any]] = {}
        reports: Reports = {}  # the kernel's reports, once per workload (the jobs keep theirs alive)
        for job in jobs:
            trace = traces[job.label]
            data.traces[job.label] = trace
            data.roles[job.label] = job.role
            own = run_metrics(ctx.registry, kernel, job.workload, job.device, trace, reports)
            if job.role == "reference":
                compared[job.label] = {"run": own}
                continue
            found = self.compare(kernel, trace, ref, data.deviations, job.label)
            found["registered"] = {**registered_metrics(ctx, trace, ref, kernel), **own}
            compared[job.label] = found
        return compared

    def compare(
        self, kernel: Kernel, trace: Trace, ref: Trace, deviations: dict[str, np.ndarray], label: str
    ) -> dict[str, Any]:
        """One run against the reference: probe deviation outside spike windows and spike timing."""
        info = kernel.info
        dt_ms = info.dt_ms or 1.0
        ncells = int(np.shape(ref.probes)[-1])
        ref_steps = spike_steps(ref.spikes, info.sample_every, ncells)
        fine = trace.refine
        steps = spike_steps(trace.spikes, info.sample_every * fine, len(ref_steps))
        steps_coarse = [s // fine for s in steps]  # on the reference's step grid
        dev = abs_deviation(trace.probes, ref.probes)
        windows = [np.union1d(a, b) for a, b in zip(steps_coarse, ref_steps, strict=True)]
        mask = spike_window_mask(windows, len(dev), info.sample_every, dt_ms)
        deviation = deviation_metrics(dev, dt_ms * info.sample_every, mask)
        deviations[label] = deviation.pop("max_over_time")
        return {"deviation": deviation, "spikes": spike_metrics(steps_coarse, ref_steps, dt_ms)}

    def _execute_all(self, ctx: AuditContext, scenario: Scenario, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Run the jobs: the baselines (reference, gold, ensemble) through ``ctx.baseline`` (they
        depend only on the protocol, its seed and size, and the engine, never on the candidate),
        then the candidates."""
        prefix = f"{self.name}: "
        key = (self.name, kernel.name, scenario.seed, scenario.reduced, scenario.total_ms, ctx.settings.engine)
        base = [j for j in jobs if j.role in ("reference", "gold", "ensemble")]
        others = [j for j in jobs if all(j is not b for b in base)]
        # the candidates run beside the baselines (with cached baselines they run alone, as before)
        parts: list[Callable[[], dict[str, Trace]]] = [
            lambda: ctx.baseline(key, lambda: self._execute_base(ctx, prefix, kernel, base)),
            lambda: self._execute_candidates(ctx, prefix, kernel, others),
        ]
        done = concurrently(ctx.settings.threads, parts, ctx.slots)
        return {label: trace for part in done for label, trace in part.items()}

    def _execute_candidates(self, ctx: AuditContext, prefix: str, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Run the candidates (and their dt/k runs), then locate each candidate's violation to its
        step (``forensics``): in the candidates' own thread, so the replay overlaps the baselines."""
        traces = self._execute(ctx, prefix, kernel, jobs)
        for job in jobs:
            trace = traces[job.label]
            if self.forensics and job.role == "candidate" and trace.violation and trace.checkpoints:
                trace.violation = self.forensics(job, kernel, trace) or trace.violation
        return traces

    def _execute_base(self, ctx: AuditContext, prefix: str, kernel: Kernel, base: list[Job]) -> dict[str, Trace]:
        """The baseline runs, through the on-disk baseline cache (:mod:`hwbench.accuracy.baseline_cache`;
        off with ``settings.cache``): runs it holds (verified) are read and marked ``from_cache``
        (keeping the timings of the run that made the entry, so their kernel metrics are those of
        a run, not of a read), their progress bars full; the others run and are kept."""
        from hwbench.accuracy.baseline_cache import BaselineCache, baseline_key

        cache = BaselineCache.from_env() if ctx.settings.cache else None
        if cache is None:
            return self._execute(ctx, prefix, kernel, base)
        keys = {
            j.label: baseline_key(protocol=self.name, scenario=j.scenario, kernel=kernel, workload=j.workload,
                                  device=j.device, mode=j.mode, engine=j.engine, sample_every=j.sample_every,
                                  refine=j.refine)
            for j in base
        }  # fmt: skip
        found: dict[str, Trace] = {}
        for job in base:
            trace = cache.load(keys[job.label][0])
            if trace is None:
                continue
            trace.label, trace.from_cache = job.label, True  # its timings: the run that made the entry
            ticker(ctx, prefix + job.label, job.scenario.total_ms)(job.scenario.total_ms)
            found[job.label] = trace
        ran = self._execute(ctx, prefix, kernel, [j for j in base if j.label not in found])
        for label, trace in ran.items():
            cache.store(*keys[label], trace)
        return {**ran, **found}

    def _execute(self, ctx: AuditContext, prefix: str, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Build and run every job. Jobs that compile to the same program share one executor and run
        one after another; different programs build at once, a thread each (XLA releases the GIL
        while compiling and executing), and simulate as the audit's run slots let them
        (``ctx.run_slot``: one per core, the costliest waiting run first), unless
        ``settings.threads`` caps the threads."""
        groups: dict[tuple[Any, ...], list[Job]] = {}
        for job in jobs:
            groups.setdefault(job.executor_key(), []).append(job)
        parts = [partial(run_group, ctx, prefix, kernel, group) for group in groups.values()]
        done = concurrently(ctx.settings.threads, parts, ctx.slots)
        return {label: trace for group in done for label, trace in group}


def concurrently(threads: int | None, parts: Sequence[Callable[[], T]], slots: RunSlots | None = None) -> list[T]:
    """The result of every part, in order; the parts run at once (a thread each, at most
    ``threads``) unless ``threads`` is 1.

    Why: a first audit's baselines (three programs), its candidates and its other protocols are
    independent; run one after the other they leave a core idle while the longest baseline (the
    fp64 gold) finishes and again while a candidate runs alone. XLA releases the GIL while it
    compiles and executes, so the other parts fill those gaps (the audit's run ``slots`` decide
    which simulate). A failed part fails the whole: the first failure in order is raised, and the
    slots are closed, so that no run still waiting for one starts; a part stopped that way
    (:class:`SlotsClosed`) gives way to the failure that closed them."""
    if threads == 1 or len(parts) < 2:
        return [part() for part in parts]
    pool = ThreadPoolExecutor(max_workers=min(len(parts), threads or len(parts)))
    futures = [pool.submit(part) for part in parts]
    try:
        results = [future.result() for future in futures]
    except BaseException as exc:
        pool.shutdown(wait=False, cancel_futures=True)
        if slots is not None:
            slots.close()
        if isinstance(exc, SlotsClosed):
            for future in futures:
                cause = None if future.cancelled() else future.exception()
                if cause is not None and not isinstance(cause, SlotsClosed):
                    raise cause from None
        raise
    pool.shutdown()
    return results


def run_group(ctx: AuditContext, prefix: str, kernel: Kernel, group: list[Job]) -> list[tuple[str, Trace]]:
    """Build one executor for jobs that share a program and run each job's scenario on it."""
    first = group[0]
    support = first.device.supports(kernel, first.workload, mode=first.mode)
    if not support.ok:
        raise UnavailableError(
            f"device '{first.device.name}' cannot run {first.scenario.name} "
            f"({first.workload.size} cells): {support.reason}"
        )
    t0 = time.perf_counter()
    request = RunRequest(
        kernel, first.workload, mode=first.mode, engine=first.engine, profile=first.profile,
        sample_every=first.sample_every,
    )  # fmt: skip
    executor = first.device.executor(request)
    setup = time.perf_counter() - t0
    probe = first.device.probe()
    if probe.status == "unavailable":  # (candidates were checked; the CPU reference is checked here)
        raise UnavailableError(f"device '{first.device.name}' is unavailable here: {probe.reason}")
    out = []
    with ctx.run_slot(sum(map(run_cost, group))):
        for job in group:
            trace = run_scenario(
                executor, kernel, job.workload, job.scenario, label=job.label, check=state_checker(kernel),
                progress=ticker(ctx, prefix + job.label, job.scenario.total_ms),
            )  # fmt: skip
            trace.setup_s = setup if job is first else 0.0
            trace.execution = probe.status
            trace.detail = executor.engine_name + (f" ({executor.detail})" if executor.detail else "")
            trace.refine = job.refine
            out.append((job.label, trace))
    return out


FP64_COST = 2.6
"""An fp64 run's CPU time over an fp32 run's (io-ehh on JAX: the gold 13.6 CPU-s, the reference 5.2)."""
CANDIDATE_COST = 1.5
"""An emulated candidate's over native fp32: issue 31's bound, which 15 of the 18 device modes meet."""


def run_cost(job: Job) -> float:
    """What a run is expected to cost, for ordering the runs (:meth:`AuditContext.run_slot`):
    simulated steps times cells, weighted by precision and emulation. Only an order: a wrong
    estimate makes an audit slower, never different."""
    weight = FP64_COST if job.mode == "fp64" else CANDIDATE_COST if job.role in ("candidate", "dt-refine") else 1.0
    return job.scenario.total_ms * job.refine * job.workload.size * weight


def ticker(ctx: AuditContext, label: str, total_ms: float) -> Callable[[float], None]:
    """The progress callback of one run: ms simulated so far, reported under ``label``."""

    def tick(ms: float) -> None:
        ctx.tick(label, ms, total_ms)

    return tick


def resolve(ctx: AuditContext, c: Candidate) -> Resolved:
    """The candidate's device (available here), mode and profile (its own, a file, or overrides)."""
    device = ctx.registry.device(c.device)
    mode = resolve_mode(device, c.mode)
    probe = device.probe()
    if probe.status == "unavailable":
        raise UnavailableError(f"device '{device.name}' is unavailable here: {probe.reason}")
    profile = c.profile
    if profile is None and c.profile_path:
        from hwbench.accuracy.numerics.profile import NumericsProfile

        profile = NumericsProfile.load(c.profile_path)
    elif profile is None and c.overrides:
        profile = numerics_with_overrides(device, mode, c.overrides)
    return Resolved(c, device, mode, profile)


def cand_label(device: str, mode: str | None) -> str:
    return device + (f" [{mode}]" if mode else "")


def registered_metrics(ctx: AuditContext, trace: Trace, ref: Trace, kernel: Kernel) -> dict[str, Any]:
    """Every registered accuracy/check metric; a broken (third-party) metric reports its error."""
    out: dict[str, Any] = {}
    for metric in ctx.registry.metrics.values():
        if metric.info.kind not in ("accuracy", "check"):
            continue
        try:
            out[metric.name] = metric.compute(candidate=trace, reference=ref, kernel=kernel)
        except Exception as exc:
            out[metric.name] = {"error": f"{exc.__class__.__name__}: {exc}"}
    return out


def summary(job: Job, trace: Trace, metrics: dict[str, Any]) -> RunSummary:
    """What the JSON report keeps of one run (its traces stay in memory, for the plots)."""
    prof = job.profile
    if prof is None and trace.execution == "emulated":
        prof = job.device.numerics(job.mode)
    return RunSummary(
        label=job.label,
        role=job.role,
        device=job.device.name,
        mode=job.mode,
        execution=trace.execution,
        engine=trace.detail,
        profile=None if prof is None else prof.name,
        profile_confidence=confidence_counts(prof),
        native=[] if prof is None or trace.execution != "emulated" else native_parts(prof),
        from_cache=trace.from_cache,
        setup_s=trace.setup_s,
        run_s=trace.run_s,
        deviation=metrics.get("deviation"),
        spikes=metrics.get("spikes"),
        violation=trace.violation,
        counters=trace.counters,
        metrics=metrics.get("registered", metrics.get("run", {})),
    )


def verdict_of(job: Job, verdict: Any, score: float, reasons: list[str]) -> CandidateVerdict:
    """A candidate's (or its dt/k run's) verdict; a dt/k run names its factor after the mode."""
    mode = job.mode if job.role == "candidate" else f"{job.mode} {job.label.split()[-1]}"
    return CandidateVerdict(device=job.device.name, mode=mode, verdict=verdict, score=score, reasons=reasons)


def with_grid_index(found: dict[str, Any], workload: Workload) -> dict[str, Any]:
    """The violation with its cell's grid index next to the cell number (io-ehh numbers its cells
    by partner count; ``annotations["position"]`` is the grid index x + n*y + n*n*z)."""
    position = workload.annotations.get("position")
    cell = found.get("cell")
    if position is None or not isinstance(cell, int) or not 0 <= cell < len(position):
        return found
    out = dict(found, cell_grid_index=int(position[cell]))
    if "explanation" in out:
        out["explanation"] = out["explanation"].replace(
            f"cell {cell},", f"cell {cell} (grid index {out['cell_grid_index']}),", 1
        )
    return out


def confidence_counts(profile: Any) -> dict[str, int]:
    if profile is None:
        return {}
    counts: dict[str, int] = {}
    for op in profile.ops.values():
        key = getattr(op.confidence, "value", str(op.confidence))
        counts[key] = counts.get(key, 0) + 1
    return counts
