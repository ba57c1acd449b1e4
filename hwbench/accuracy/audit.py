"""The audit: run accuracy protocols on candidates and judge them against the noise floor.

The auditor runs whatever protocols it is given (:mod:`hwbench.stress.protocols` assembles the
published ones: numerical validation and the spike stress test, with dt refinement and forensics,
which push numerics and so live in :mod:`hwbench.stress`). For each protocol every run sees the
same scenario:
  reference  CPU fp32 (the study's reference),
  gold       CPU fp64,
  ensemble   legitimate IEEE fp32 variants: the gap-junction sum in reverse order, and the
             initial voltages moved by one fp32 ulp,
  candidate  each requested device and mode (real, or emulated per its numerics profile).
Deviations are measured against the reference; the ensemble and gold give the floor; the verdict
rules live in :mod:`hwbench.accuracy.verdict`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.accuracy.checks import state_checker
from hwbench.accuracy.metrics import abs_deviation, deviation_metrics, spike_metrics, spike_steps, spike_window_mask
from hwbench.accuracy.report import AuditReport, CandidateVerdict, ProtocolReport, Role, RunSummary
from hwbench.accuracy.verdict import combine, floor, judge, regime
from hwbench.core.bench import STUDY_SEED
from hwbench.core.device import Device, RunRequest, numerics_with_overrides
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, KernelInfo, Workload
from hwbench.core.layout import pass_major_order
from hwbench.core.plugins import Registry
from hwbench.core.runner import resolve_mode
from hwbench.core.scenario import Scenario, Trace, run_scenario

if TYPE_CHECKING:
    from hwbench.accuracy.baseline_cache import BaselineCache

BASE_RUNS = ("reference", "gold (CPU fp64)", "ensemble: reversed order", "ensemble: +1 ulp V0")


@dataclass
class Candidate:
    """A device and mode to audit, with optional profile parameter overrides, a profile file, or a
    profile built in memory (``profile``: a sweep builds one per cell; it wins over the other two)."""

    device: str
    mode: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    profile_path: str | None = None
    profile: Any = None  # a NumericsProfile


@dataclass(frozen=True)
class Resolved:
    """A candidate with its device record, its mode and the profile it runs (None: the device's own)."""

    candidate: Candidate
    device: Device
    mode: str
    profile: Any = None


@dataclass
class AuditSettings:
    kernel: str  # the kernel audited; its record (KernelInfo.audit) says which protocols apply
    quick: bool = False
    dt_refine: bool = False
    seed: int = STUDY_SEED
    protocols: tuple[str, ...] = ()  # empty: every protocol the kernel declares
    engine: str | None = None  # engine for reference, gold and ensemble (default: fastest)
    refine_factors: tuple[int, ...] = (10, 100)  # dt/k of the dt-refinement runs (with dt_refine)
    threads: int | None = None  # runs built and run at once (default: one per core); 1 inside a 1-thread worker
    cache: bool = True  # reuse and keep reference/gold/ensemble runs in the baseline cache (hwbench audit --no-cache)


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
    traces: dict[str, Trace] = field(default_factory=dict)
    deviations: dict[str, np.ndarray] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)


CacheKeys = dict[str, tuple[str, dict[str, Any]]]  # run label -> (baseline cache key, the fields it hashes)
BaseRuns = dict[tuple[Any, ...], dict[str, Trace]]  # (protocol, seed, reduced, ms, engine) -> base traces
Progress = Callable[[str, float, float], None]  # (label, ms done in this step, total ms of label)
ProtocolFactory = Callable[[AuditSettings, KernelInfo], Scenario]  # a protocol's scenario for a kernel
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


class Auditor:
    """Runs protocols on candidates and judges them; what the protocols are is given to it.

    ``protocols`` maps each protocol name ``settings.protocols`` may ask for to its scenario;
    ``refine`` (with ``settings.dt_refine``) adds the candidate at dt/k, ``forensics`` locates a
    hard-check violation to its step. Both are optional: without them the audit judges the runs
    as they are.
    """

    def __init__(
        self,
        registry: Registry,
        settings: AuditSettings,
        progress: Progress | None = None,
        *,
        protocols: dict[str, ProtocolFactory],
        refine: Refiner | None = None,
        forensics: Forensics | None = None,
        base_runs: BaseRuns | None = None,
    ) -> None:
        self.registry = registry
        self.base_runs = base_runs
        self.reused: list[str] = []  # protocols whose base runs came from ``base_runs``
        self.settings = settings
        self.progress = progress
        self.protocols = protocols
        self.refine = refine
        self.forensics = forensics
        self.data: dict[str, ProtocolData] = {}
        self._cache: BaselineCache | None = None
        self._cache_opened = False

    def protocol_names(self) -> tuple[str, ...]:
        """The protocols asked for, or every one the kernel declares; a UsageError names unknown ones."""
        info = self.registry.kernel(self.settings.kernel).info
        names = self.settings.protocols or tuple(p for p in info.audit.declared() if p in self.protocols)
        if not names:
            why = "; ".join(f"{p}: {info.audit.reason(p)}" for p in self.protocols)
            raise UsageError(f"kernel '{info.name}' cannot be audited here ({why})")
        unknown = [p for p in names if p not in self.protocols]
        if unknown:
            raise UsageError(f"unknown protocol {', '.join(unknown)}; choose from: {', '.join(self.protocols)}")
        return names

    def scenarios(self) -> dict[str, Scenario]:
        """The scenario of every protocol to run; a protocol the kernel refuses is a UsageError with its reason."""
        info = self.registry.kernel(self.settings.kernel).info
        return {name: self.protocols[name](self.settings, info) for name in self.protocol_names()}

    @property
    def refining(self) -> bool:
        return self.settings.dt_refine and self.refine is not None

    def planned_runs(self, candidates: list[Candidate]) -> list[tuple[str, float]]:
        """(label, biological ms) of every run, for progress bars (labels as the runs report them)."""
        labels = list(BASE_RUNS)
        for c in candidates:
            mode = c.mode or self.registry.device(c.device).default_mode
            label = self._cand_label(Candidate(c.device, mode))
            labels.append(label)
            if self.refining:
                labels += [f"{label} dt/{k}" for k in self.settings.refine_factors]
        return [(f"{name}: {lab}", sc.total_ms) for name, sc in self.scenarios().items() for lab in labels]

    @staticmethod
    def _cand_label(c: Candidate) -> str:
        return f"{c.device}" + (f" [{c.mode}]" if c.mode else "")

    # --- the whole audit -----------------------------------------------------------------------
    def run(self, candidates: list[Candidate]) -> AuditReport:
        t_start = time.perf_counter()
        from hwbench.core.engines.jax_cache import enable_compilation_cache

        enable_compilation_cache()
        cpu = self.registry.device("cpu")
        resolved, planned = self.preflight(candidates)
        protocol_reports = []
        for name, scenario in planned.items():
            kernel = self.registry.kernel(scenario.kernel)
            protocol_reports.append(self._protocol(name, scenario, kernel, cpu, resolved))
        overall = combine([p.verdict for p in protocol_reports])
        reasons = [
            f"{p.name}: {v.device} [{v.mode}] {v.verdict.value} - {v.reasons[0]}"
            for p in protocol_reports
            for v in p.verdicts
        ]
        return AuditReport(
            settings={
                "quick": self.settings.quick,
                "dt_refine": self.settings.dt_refine,
                "seed": self.settings.seed,
                "kernel": self.settings.kernel,
                "protocols": list(planned),
                **({"base_runs_reused_from_earlier_audit": self.reused} if self.reused else {}),
                "candidates": [
                    {
                        "device": r.candidate.device,
                        "mode": r.mode,
                        "overrides": r.candidate.overrides,
                        "profile_file": r.candidate.profile_path,
                        **({"profile": r.candidate.profile.name} if r.candidate.profile is not None else {}),
                    }
                    for r in resolved
                ],
            },
            protocols=protocol_reports,
            verdict=overall,
            reasons=reasons,
            elapsed_s=time.perf_counter() - t_start,
        )

    def preflight(self, candidates: list[Candidate]) -> tuple[list[Resolved], dict[str, Scenario]]:
        """Resolve every candidate and refuse, before minutes of reference runs, what cannot run."""
        self.registry.device("cpu")  # the reference: refused now if disabled, not after the progress bars
        resolved = [self._resolve(c) for c in candidates]
        planned = self.scenarios()
        for name, scenario in planned.items():
            kernel = self.registry.kernel(scenario.kernel)
            if self.refining and kernel.info.dt_param is None:
                raise UsageError(
                    f"--dt-refine: kernel '{kernel.name}' of protocol '{name}' is discrete-time (no dt parameter)"
                )
            workload = scenario.make_workload(kernel)
            for r in resolved:
                support = r.device.supports(kernel, workload, mode=r.mode)
                if not support.ok:
                    raise UnavailableError(
                        f"device '{r.device.name}' [{r.mode}] cannot run the {name} protocol "
                        f"({workload.size} cells): {support.reason}"
                    )
        return resolved, planned

    def _resolve(self, c: Candidate) -> Resolved:
        device = self.registry.device(c.device)
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

    def _protocol(
        self, name: str, scenario: Scenario, kernel: Kernel, cpu: Device, resolved: list[Resolved]
    ) -> ProtocolReport:
        """Run one protocol's jobs and judge every candidate against the floor of its ensemble."""
        data = ProtocolData(scenario, kernel.info.probe, (kernel.info.dt_ms or 1.0) * kernel.info.sample_every)
        self.data[name] = data
        jobs = self._jobs(scenario, kernel, cpu, resolved)
        traces = self._traces(name, scenario, kernel, jobs)
        compared = self._compare_all(kernel, jobs, traces, data)
        ensemble = [compared[j.label] for j in jobs if j.role == "ensemble"]
        regime_name = regime(ensemble)
        floor_values = floor([compared[j.label] for j in jobs if j.role in ("gold", "ensemble")])
        judged = [job for job in jobs if job.role in ("candidate", "dt-refine")]
        unit = kernel.info.probe_unit
        verdicts = [self._verdict(j, compared[j.label], traces[j.label], floor_values, regime_name, unit)
                    for j in judged]  # fmt: skip
        main = [v.verdict for v, job in zip(verdicts, judged, strict=True) if job.role == "candidate"]
        return ProtocolReport(
            name=name,
            description=scenario.description,
            reduced=scenario.reduced,
            probe_unit=kernel.info.probe_unit,
            sample_ms=(kernel.info.dt_ms or 1.0) * kernel.info.sample_every,
            regime=regime_name,
            floor=floor_values,
            runs=[self._summary(job, traces[job.label], compared.get(job.label, {})) for job in jobs],
            verdicts=verdicts,
            verdict=combine(main),
        )

    def _jobs(self, scenario: Scenario, kernel: Kernel, cpu: Device, resolved: list[Resolved]) -> list[Job]:
        """The reference, gold and ensemble runs on the CPU, then each candidate (and its dt/k runs)."""
        workload = scenario.make_workload(kernel)
        engine = self.settings.engine
        reordered = reversed_sum_order(workload)
        nudged = perturbed_voltages(workload, kernel.info.perturbed_rows())
        jobs = [
            Job("reference", "reference", cpu, "fp32", workload, scenario, engine=engine),
            Job("gold (CPU fp64)", "gold", cpu, "fp64", workload, scenario, engine=engine),
            Job("ensemble: reversed order", "ensemble", cpu, "fp32", reordered, scenario, engine=engine),
            Job("ensemble: +1 ulp V0", "ensemble", cpu, "fp32", nudged, scenario, engine=engine),
        ]
        for r in resolved:
            label = self._cand_label(Candidate(r.candidate.device, r.mode))
            job = Job(label, "candidate", r.device, r.mode, workload, scenario, profile=r.profile)
            jobs.append(job)
            if self.refine is not None and self.refining:
                jobs += [self.refine(job, kernel, k) for k in self.settings.refine_factors]
        return jobs

    def _traces(self, name: str, scenario: Scenario, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Run the jobs; refuse a protocol whose reference fails, and locate each candidate's violation."""
        traces = self._execute_reusing(name, scenario, kernel, jobs)
        ref = traces["reference"]
        if ref.violation:
            raise UnavailableError(f"the CPU fp32 reference itself failed a hard check in {name}: {ref.violation}")
        for job in jobs:
            trace = traces[job.label]
            if self.forensics and job.role == "candidate" and trace.violation and trace.checkpoints:
                trace.violation = self.forensics(job, kernel, trace) or trace.violation
            if trace.violation:
                trace.violation = with_grid_index(trace.violation, job.workload)
        return traces

    def _compare_all(
        self, kernel: Kernel, jobs: list[Job], traces: dict[str, Trace], data: ProtocolData
    ) -> dict[str, dict[str, Any]]:
        """Deviation, spike and registered metrics of every run but the reference, against the reference."""
        ref = traces["reference"]
        ncells = int(np.shape(ref.probes)[-1])
        ref_steps = spike_steps(ref.spikes, kernel.info.sample_every, ncells)
        compared: dict[str, dict[str, Any]] = {}
        for job in jobs:
            trace = traces[job.label]
            data.traces[job.label] = trace
            data.roles[job.label] = job.role
            if job.role == "reference":
                continue
            compared[job.label] = self._compare(kernel, trace, ref, ref_steps, data.deviations, job.label)
        return compared

    def _compare(
        self,
        kernel: Kernel,
        trace: Trace,
        ref: Trace,
        ref_steps: list[np.ndarray],
        deviations: dict[str, np.ndarray],
        label: str,
    ) -> dict[str, Any]:
        """One run against the reference: probe deviation outside spike windows, spike timing, registered metrics."""
        info = kernel.info
        dt_ms = info.dt_ms or 1.0
        fine = trace.refine
        steps = spike_steps(trace.spikes, info.sample_every * fine, len(ref_steps))
        steps_coarse = [s // fine for s in steps]  # on the reference's step grid
        dev = abs_deviation(trace.probes, ref.probes)
        windows = [np.union1d(a, b) for a, b in zip(steps_coarse, ref_steps, strict=True)]
        mask = spike_window_mask(windows, len(dev), info.sample_every, dt_ms)
        deviation = deviation_metrics(dev, dt_ms * info.sample_every, mask)
        deviations[label] = deviation.pop("max_over_time")
        return {
            "deviation": deviation,
            "spikes": spike_metrics(steps_coarse, ref_steps, dt_ms),
            "registered": self._registered_metrics(trace, ref, kernel),
        }

    @staticmethod
    def _summary(job: Job, trace: Trace, metrics: dict[str, Any]) -> RunSummary:
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
            profile_confidence=_confidence_counts(prof),
            from_cache=trace.from_cache,
            setup_s=trace.setup_s,
            run_s=trace.run_s,
            deviation=metrics.get("deviation"),
            spikes=metrics.get("spikes"),
            violation=trace.violation,
            counters=trace.counters,
            metrics=metrics.get("registered", {}),
        )

    @staticmethod
    def _verdict(
        job: Job, metrics: dict[str, Any], trace: Trace, floor_values: dict[str, float], regime_name: str, unit: str
    ) -> CandidateVerdict:
        """A candidate's (or its dt/k run's) verdict; a dt/k run names its factor after the mode."""
        verdict, score, reasons = judge(metrics, trace.violation, floor_values, regime_name, unit)
        mode = job.mode if job.role == "candidate" else f"{job.mode} {job.label.split()[-1]}"
        return CandidateVerdict(device=job.device.name, mode=mode, verdict=verdict, score=score, reasons=reasons)

    def _registered_metrics(self, trace: Trace, ref: Trace, kernel: Kernel) -> dict[str, Any]:
        """Every registered accuracy/check metric; a broken (third-party) metric reports its error."""
        out: dict[str, Any] = {}
        for metric in self.registry.metrics.values():
            if metric.info.kind not in ("accuracy", "check"):
                continue
            try:
                out[metric.name] = metric.compute(candidate=trace, reference=ref, kernel=kernel)
            except Exception as exc:
                out[metric.name] = {"error": f"{exc.__class__.__name__}: {exc}"}
        return out

    def _execute_reusing(self, name: str, scenario: Scenario, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Run the jobs, taking the reference, gold and ensemble traces from where they are kept: a
        ``base_runs`` dict (a sweep's worker keeps one) or the on-disk baseline cache
        (:mod:`hwbench.accuracy.baseline_cache`, off with ``settings.cache``). They depend only on
        the protocol, its workload and seed, and the engine, never on the candidate, and are
        deterministic. Base runs not found run with the candidates, and are kept for next time."""
        base = [j for j in jobs if j.role in ("reference", "gold", "ensemble")]
        key = (name, scenario.seed, scenario.reduced, scenario.total_ms, self.settings.engine)
        found = None if self.base_runs is None else self.base_runs.get(key)
        if found is not None:
            self.reused.append(name)
        keys = {} if found is not None else self._cache_keys(name, kernel, base)
        found = found if found is not None else self._cached_base(name, base, keys)
        traces = self._execute(f"{name}: ", kernel, [j for j in jobs if j.label not in found])
        self._keep_base(base, traces, keys)
        traces.update(found)
        if self.base_runs is not None:
            self.base_runs[key] = {j.label: traces[j.label] for j in base}
        return traces

    def _cache_keys(self, name: str, kernel: Kernel, base: list[Job]) -> CacheKeys:
        """The baseline cache's key of each base run (empty with the cache off)."""
        if self._baseline_cache() is None:
            return {}
        from hwbench.accuracy.baseline_cache import baseline_key

        return {
            j.label: baseline_key(protocol=name, scenario=j.scenario, kernel=kernel, workload=j.workload,
                                  device=j.device, mode=j.mode, engine=j.engine, sample_every=j.sample_every,
                                  refine=j.refine)
            for j in base
        }  # fmt: skip

    def _cached_base(self, name: str, base: list[Job], keys: CacheKeys) -> dict[str, Trace]:
        """The base runs the baseline cache holds (verified), marked ``from_cache``, their progress bars full."""
        cache = self._baseline_cache() if keys else None
        found: dict[str, Trace] = {}
        if cache is None:
            return found
        for job in base:
            t0 = time.perf_counter()
            trace = cache.load(keys[job.label][0])
            if trace is None:
                continue
            trace.label, trace.from_cache, trace.run_s, trace.setup_s = job.label, True, time.perf_counter() - t0, 0.0
            self._ticker(f"{name}: {job.label}", job.scenario.total_ms)(job.scenario.total_ms)
            found[job.label] = trace
        return found

    def _keep_base(self, base: list[Job], traces: dict[str, Trace], keys: CacheKeys) -> None:
        """Store the base runs just computed in the baseline cache."""
        cache = self._baseline_cache() if keys else None
        if cache is None:
            return
        for job in base:
            if job.label in traces and job.label in keys:
                cache.store(*keys[job.label], traces[job.label])

    def _baseline_cache(self) -> BaselineCache | None:
        """The baseline cache the environment names, opened once per auditor (None: off)."""
        if not self._cache_opened:
            from hwbench.accuracy.baseline_cache import BaselineCache

            self._cache = BaselineCache.from_env() if self.settings.cache else None
            self._cache_opened = True
        return self._cache

    def _execute(self, prefix: str, kernel: Kernel, jobs: list[Job]) -> dict[str, Trace]:
        """Build and run every job. Jobs that compile to the same program share one executor and run
        one after another; different programs build and run in parallel threads (XLA releases the
        GIL while compiling and executing, so every core works)."""
        groups: dict[tuple[Any, ...], list[Job]] = {}
        for job in jobs:
            groups.setdefault(job.executor_key(), []).append(job)
        workers = max(1, min(len(groups), self.settings.threads or os.cpu_count() or 1))
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            results = list(pool.map(lambda group: self._run_group(prefix, kernel, group), groups.values()))
        except BaseException:  # Ctrl-C or a failed group: the groups not yet started never start
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        return {label: trace for group in results for label, trace in group}

    def _run_group(self, prefix: str, kernel: Kernel, group: list[Job]) -> list[tuple[str, Trace]]:
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
            kernel,
            first.workload,
            mode=first.mode,
            engine=first.engine,
            profile=first.profile,
            sample_every=first.sample_every,
        )
        executor = first.device.executor(request)
        setup = time.perf_counter() - t0
        probe = first.device.probe()
        if probe.status == "unavailable":  # (candidates were checked; the CPU reference is checked here)
            raise UnavailableError(f"device '{first.device.name}' is unavailable here: {probe.reason}")
        execution = probe.status
        out = []
        for job in group:
            trace = run_scenario(
                executor,
                kernel,
                job.workload,
                job.scenario,
                label=job.label,
                check=state_checker(kernel),
                progress=self._ticker(prefix + job.label, job.scenario.total_ms),
            )
            trace.setup_s = setup if job is first else 0.0
            trace.execution = execution
            trace.detail = executor.engine_name + (f" ({executor.detail})" if executor.detail else "")
            trace.refine = job.refine
            out.append((job.label, trace))
        return out

    def _ticker(self, label: str, total_ms: float) -> Callable[[float], None]:
        """The progress callback of one run: ms simulated so far, reported under ``label``."""

        def tick(ms: float) -> None:
            if self.progress:
                self.progress(label, ms, total_ms)

        return tick


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


def _confidence_counts(profile: Any) -> dict[str, int]:
    if profile is None:
        return {}
    counts: dict[str, int] = {}
    for op in profile.ops.values():
        key = getattr(op.confidence, "value", str(op.confidence))
        counts[key] = counts.get(key, 0) + 1
    return counts
