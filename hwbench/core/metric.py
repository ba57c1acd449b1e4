"""The Metric contract: turn traces, timings, activity records or energy readings into named numbers.

What ``compute(**data)`` receives, by ``info.kind`` (every key is always passed for its kind, values
may be None; a metric takes what it needs and ignores the rest, so new keys never break it):

- ``accuracy`` / ``check`` (the audit): ``candidate=``, ``reference=`` (trace sets,
  :class:`hwbench.core.scenario.Trace`) and ``kernel=``.
- ``performance`` (``run``, ``bench``): ``timing=`` (:class:`hwbench.core.results.Timing`),
  ``kernel=``, ``workload=``, ``activity=`` (:class:`hwbench.core.activity.Activity` of the timed
  steps, or None), ``structure=`` (:class:`hwbench.core.activity.Structure` or None) and
  ``energy=`` (:class:`hwbench.core.energy.EnergyReading` of the timed phase, or None).
- ``static``: the same keys as ``performance``; NeuroBench's static metrics read ``structure``.
- ``workload``: the same keys; NeuroBench's workload metrics read ``activity`` (per-sample averages).
- ``energy``: the same keys; read ``energy`` with ``timing`` / ``activity`` for per-event figures.

``compute`` returns a flat dict of numbers; an empty dict means "nothing to report for this run"
(e.g. energy not measured) and is left out of results. ``info.requires`` names what a kernel must
report (:data:`hwbench.core.activity.REPORTS`) for the metric to apply; ``applies_to`` checks it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from hwbench.core.kernel import Kernel

MetricKind = Literal["accuracy", "performance", "check", "static", "workload", "energy"]
RUN_KINDS: tuple[str, ...] = ("performance", "static", "workload", "energy")
"""Kinds computed from one run (``run``, ``bench``); the audit computes accuracy and check metrics."""


class MetricInfo(BaseModel):
    name: str
    kind: MetricKind
    unit: str
    summary: str
    definition: str = Field("", description="exactly what is counted or computed")
    source: str = Field("", description="where the definition comes from")
    requires: list[str] = Field(default_factory=list, description="what a kernel must report (Kernel.reports)")
    units: dict[str, str] = Field(
        default_factory=dict, description="the unit of each value compute() returns, where it is not `unit`"
    )

    def unit_of(self, key: str) -> str:
        """The unit of the value ``key`` (``units``, else ``unit`` unless that says "various")."""
        return self.units.get(key, "" if self.unit == "various" else self.unit)


class Metric(ABC):
    """A named computation over a run (registered through ``hwbench_metrics``); see the module docstring."""

    info: MetricInfo

    @property
    def name(self) -> str:
        return self.info.name

    def applies_to(self, kernel: Kernel) -> bool:
        """Whether ``kernel`` reports everything this metric requires."""
        return set(self.info.requires) <= set(getattr(kernel, "reports", ()))

    @abstractmethod
    def compute(self, **data: Any) -> dict[str, float]: ...


@dataclass
class MetricValues:
    """What :func:`evaluate` found: values per metric, and the error of each metric that raised."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def evaluate(metrics: Iterable[Metric], kinds: Iterable[str], kernel: Kernel, **data: Any) -> MetricValues:
    """Every metric of ``kinds`` that applies to ``kernel``; a broken (third-party) metric reports its error."""
    wanted = set(kinds)
    found = MetricValues()
    for metric in metrics:
        if metric.info.kind not in wanted or not metric.applies_to(kernel):
            continue
        try:
            values = metric.compute(kernel=kernel, **data)
        except Exception as exc:
            found.errors[metric.name] = f"{exc.__class__.__name__}: {exc}"
            continue
        if values:
            found.values[metric.name] = {k: float(v) for k, v in values.items()}
    return found
