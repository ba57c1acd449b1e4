"""``example-rms-deviation``: how a metric plugin turns two traces into named numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.metric import Metric, MetricInfo


class RmsDeviation(Metric):
    """Root-mean-square and maximum absolute deviation of a candidate trace from a reference.

    Accepts ``candidate=`` and ``reference=`` as array-likes of the same shape. Computed in
    float64 so that the metric itself adds no rounding worth mentioning to an fp32 comparison.
    """

    info = MetricInfo(
        name="example-rms-deviation",
        kind="accuracy",
        unit="trace unit",
        summary="RMS and max |candidate - reference| (example plugin)",
    )

    def compute(self, **data: Any) -> dict[str, float]:
        try:
            candidate = np.asarray(data["candidate"], dtype=np.float64)
            reference = np.asarray(data["reference"], dtype=np.float64)
        except KeyError as exc:
            raise UsageError(f"metric '{self.name}' needs candidate= and reference=; missing {exc}") from None
        if candidate.shape != reference.shape:
            raise UsageError(f"metric '{self.name}': shapes differ, {candidate.shape} vs {reference.shape}")
        if candidate.size == 0:
            raise UsageError(f"metric '{self.name}': the traces are empty")
        diff = candidate - reference
        return {"rms": float(np.sqrt(np.mean(diff**2))), "max_abs": float(np.max(np.abs(diff)))}
