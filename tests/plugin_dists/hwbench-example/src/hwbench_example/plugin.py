"""The entry-point module (``[project.entry-points.hwbench] example = "hwbench_example.plugin"``).

hwbench imports this module and calls each ``@hookimpl`` function on its own. Each returns a
list of typed records; names must be unique across all plugins (a clash marks this plugin
failed and the first owner keeps the name). Construction is cheap: availability is decided
later by ``Device.probe()``.
"""

from __future__ import annotations

from hwbench.api import AuditProtocol
from hwbench.core.device import Device
from hwbench.core.hookspecs import hookimpl
from hwbench.core.metric import Metric
from hwbench_example.device import ExampleDsp
from hwbench_example.metric import RmsDeviation
from hwbench_example.protocol import FinalRange


@hookimpl
def hwbench_devices() -> list[Device]:
    return [ExampleDsp()]


@hookimpl
def hwbench_metrics() -> list[Metric]:
    return [RmsDeviation()]


@hookimpl
def hwbench_audit_protocols() -> list[AuditProtocol]:
    """A contract-3 hook next to a contract-1 device: each hook is served on its own terms."""
    return [FinalRange()]
