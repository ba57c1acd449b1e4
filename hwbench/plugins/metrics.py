"""Built-in metrics plugin."""

from __future__ import annotations

from hwbench.core.hookspecs import hookimpl
from hwbench.core.metric import Metric


@hookimpl
def hwbench_metrics() -> list[Metric]:
    return []
