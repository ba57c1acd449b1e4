"""The Metric contract: turn traces or timings into named numbers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel


class MetricInfo(BaseModel):
    name: str
    kind: Literal["accuracy", "performance", "check"]
    unit: str
    summary: str


class Metric(ABC):
    """A named computation over a run (registered through ``hwbench_metrics``).

    Accuracy metrics receive ``candidate=`` and ``reference=`` (trace sets); performance metrics
    receive ``timing=`` and ``kernel=``/``workload=``. They return a flat dict of numbers.
    """

    info: MetricInfo

    @property
    def name(self) -> str:
        return self.info.name

    @abstractmethod
    def compute(self, **data: Any) -> dict[str, float]: ...
