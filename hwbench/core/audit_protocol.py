"""Audit protocols are plugins: the contract between the audit engine and each protocol.

The engine (:class:`hwbench.accuracy.audit.Auditor`) knows no protocol. It asks each registered
:class:`AuditProtocol` (hook ``hwbench_audit_protocols``, plugin contract 3) whether it applies to
the audited kernel, lets it refuse what cannot run before any long run starts, runs it with an
:class:`AuditContext` and assembles the :class:`~hwbench.core.audit_report.ProtocolReport` records
it returns into one report with one verdict. A protocol declares, in :class:`ProtocolInfo`, the
kernels it applies to, the runs it needs, what it compares, how it forms its floor and its
verdict, and what forensics it can do; ``hwbench protocols`` and docs/audit.md show these.

It lives in ``core`` (not beside the engine) because it is part of the plugin API: a third-party
protocol imports it from :mod:`hwbench.api`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from hwbench.core.run_slots import RunSlots

if TYPE_CHECKING:
    from hwbench.core.audit_report import ProtocolReport
    from hwbench.core.kernel import Kernel

STUDY_SEED = 42
"""The seed the study (Landsmeer et al. 2024) gave numpy's global generator before drawing its
network: the published protocols (bench, validation, spike stress) default to it, so io-ehh runs
on the study's own network (docs/io-ehh.md)."""

MAX_SEED = 2**32 - 1
"""The largest seed (numpy's legacy generator, which draws the study's networks, takes 0 .. 2^32 - 1);
every command's seed option and a sweep's seeds are checked against it before any work."""

Progress = Callable[[str, float, float], None]
"""(run label, amount done in this step, total of that label): biological ms, or 1 per finished run."""


@dataclass
class Candidate:
    """A device and mode to audit, with optional profile parameter overrides, a profile file, or a
    profile built in memory (``profile``: a sweep builds one per cell; it wins over the other two)."""

    device: str
    mode: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    profile_path: str | None = None
    profile: Any = None  # a NumericsProfile


@dataclass
class AuditSettings:
    """What an audit is asked to do; a protocol reads the fields that concern it."""

    kernel: str  # the kernel audited
    quick: bool = False
    dt_refine: bool = False
    seed: int = STUDY_SEED
    protocols: tuple[str, ...] = ()  # empty: every registered protocol that applies to the kernel
    engine: str | None = None  # engine for reference, gold and ensemble (default: fastest)
    refine_factors: tuple[int, ...] = (10, 100)  # dt/k of the dt-refinement runs (with dt_refine)
    threads: int | None = None  # runs simulating at once (default: one per core); 1: all one after another
    options: dict[str, Any] = field(default_factory=dict)  # protocol options (e.g. the DL protocol's "config")
    cache: bool = True  # reuse and keep baseline runs in the on-disk baseline cache (hwbench audit --no-cache)
    shards: int | None = None  # split each candidate's network over this many JAX devices (--shard)


class Compared(BaseModel):
    """One quantity a protocol compares, as a column of the audit table: ``path`` is
    ``"<RunSummary field>.<key>"`` (e.g. ``"deviation.max"``); ``unit`` shows the probe's unit."""

    header: str
    path: str
    unit: bool = False


class ProtocolInfo(BaseModel):
    """What a protocol declares about itself (shown by ``hwbench protocols``)."""

    name: str = Field(description="the --protocol name, unique across plugins")
    summary: str
    applies_to: str = Field(description="the kernels it applies to, in words (refusal() decides)")
    runs: list[str] = Field(description="the runs it needs: candidate, reference, gold, ensemble members ...")
    compares: list[Compared] = Field(description="what it compares, run against reference")
    floor: str = Field(description="how it forms its floor")
    verdict: str = Field(description="how it reaches its verdict")
    forensics: str = Field("", description="what it can locate when a candidate fails ('' none)")
    automatic: bool = Field(
        True, description="run when a kernel it applies to is audited without --protocol (False: only when named)"
    )
    sources: list[str] = Field(default_factory=list)


BaseRuns = dict[tuple[Any, ...], Any]
"""A cache of baseline results (reference, gold, ensemble) shared by several audits (a sweep's worker)."""


@dataclass
class AuditContext:
    """Everything a protocol's run sees: the kernel, the candidates as given, the settings, the
    progress callback, and :meth:`baseline`, the one place a baseline run executes."""

    registry: Any  # the hwbench.core.plugins.Registry (not imported: the registry imports this module)
    kernel: Kernel
    settings: AuditSettings
    candidates: list[Candidate]
    progress: Progress | None = None
    base_runs: BaseRuns | None = None
    data: dict[str, Any] = field(default_factory=dict)  # in-memory results for plots, per report name
    reused: list[str] = field(default_factory=list)  # baselines taken from ``base_runs``
    slots: RunSlots | None = None  # the audit's run slots (None: runs are not limited)

    def baseline(self, key: tuple[Any, ...], run: Callable[[], Any]) -> Any:
        """The result of the baseline runs ``run`` executes (reference, gold, ensemble: they depend
        on the protocol, kernel and seed, never on the candidate, and are deterministic). With a
        ``base_runs`` cache, a key already run is taken from it. Every protocol executes its
        baselines through here, so a cache of them has one home."""
        if self.base_runs is None:
            return run()
        if key in self.base_runs:
            self.reused.append(str(key[0]))
            return self.base_runs[key]
        value = run()
        self.base_runs[key] = value
        return value

    def run_slot(self, cost: float) -> AbstractContextManager[None]:
        """Hold one of the audit's run slots while a run simulates (``with ctx.run_slot(cost):``).

        At most one run per core simulates at once, the costliest waiting one first
        (:mod:`hwbench.core.run_slots`); ``cost`` is any estimate that orders a protocol's runs
        (e.g. simulated ms x cells). Without slots (an audit with ``threads=1``) it does nothing."""
        return nullcontext() if self.slots is None else self.slots.hold(cost)

    def tick(self, label: str, done: float, total: float) -> None:
        if self.progress is not None:
            self.progress(label, done, total)


class AuditProtocol(ABC):
    """An audit protocol. Subclass, fill :attr:`info`, implement :meth:`refusal` and :meth:`run`;
    register instances with ``hwbench_audit_protocols`` (plugin contract 3)."""

    info: ProtocolInfo

    @property
    def name(self) -> str:
        return self.info.name

    @abstractmethod
    def refusal(self, kernel: Kernel) -> str | None:
        """None when this protocol applies to ``kernel``; else why not (shown to the user)."""

    def preflight(self, ctx: AuditContext) -> None:
        """Refuse (UsageError / UnavailableError) what cannot run, before any long run starts."""
        return None

    def takes(self) -> frozenset[str] | None:
        """The optional settings it reads: keys of ``AuditSettings.options`` (``"config"``) and
        ``"dt_refine"``. When every protocol an audit runs declares them and none takes one that was
        given, the auditor refuses it (``--config`` with a kernel that has no configurations would
        otherwise be ignored). None (the default): not declared, nothing is refused on its account."""
        return None

    def planned_runs(self, ctx: AuditContext) -> list[tuple[str, float]]:
        """(label, total) of the runs it will report progress for (progress bars); [] is fine."""
        return []

    @abstractmethod
    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        """Run and judge every candidate; one report per scenario (a protocol may have several)."""


class LazyProtocol(AuditProtocol):
    """A protocol registered cheaply: its name and refusal rule now, the protocol itself (and the
    modules it needs) imported on first use, so loading the registry, which every ``hwbench``
    command does, does not pay for the audit machinery."""

    def __init__(self, name: str, refusal: Callable[[Kernel], str | None], load: Callable[[], AuditProtocol]) -> None:
        self._name = name
        self._refusal = refusal
        self._load = load
        self._target: AuditProtocol | None = None

    @property
    def target(self) -> AuditProtocol:
        if self._target is None:
            self._target = self._load()
        return self._target

    @property
    def name(self) -> str:
        return self._name

    @property
    def info(self) -> ProtocolInfo:  # type: ignore[override]  # a class attribute on other protocols
        return self.target.info

    def refusal(self, kernel: Kernel) -> str | None:
        return self._refusal(kernel)

    def preflight(self, ctx: AuditContext) -> None:
        self.target.preflight(ctx)

    def takes(self) -> frozenset[str] | None:
        return self.target.takes()

    def planned_runs(self, ctx: AuditContext) -> list[tuple[str, float]]:
        return self.target.planned_runs(ctx)

    def run(self, ctx: AuditContext) -> list[ProtocolReport]:
        return self.target.run(ctx)
