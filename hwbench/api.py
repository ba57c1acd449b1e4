"""The plugin API of hwbench: everything a plugin author imports, from one module.

Write a plugin against this module only (``from hwbench import api`` or
``from hwbench.api import Device, hookimpl, ...``). Its names and their meaning are the *plugin
contract*; internal modules may move between releases, this module does not break within a
contract version. :data:`CONTRACT_VERSION` counts incompatible changes:

* **1** (hwbench 0.1): ``Device.executor(kernel, workload, *, mode, engine, dtype, profile)``,
  a keyword list that grew with every feature.
* **2**: ``Device.executor(request: RunRequest)``: one typed request; new options become new
  fields with "as before" defaults, so they never break an installed plugin.
* **3** (this version): audit protocols are plugins (hook ``hwbench_audit_protocols``,
  :class:`AuditProtocol`), and a kernel declares the absolute floors of its audit in its probe's
  unit (``AuditFacts.floors``). A kernel declaring validation or stress without floors was written
  for contract 2: it is judged with contract 2's floors (in mV) through an adapter, with a note.

A plugin may declare the contract it was written for with a module-level
``HWBENCH_CONTRACT = 2`` in its entry-point module. A plugin that declares a contract newer than
this hwbench's is refused at load time with a one-line reason (``hwbench plugins`` shows it);
a device written against contract 1 (its ``executor`` takes ``kernel, workload``) keeps working
through an adapter, and a request it cannot honour is refused with a message naming the contract.
See ``docs/plugin-authors.md`` for every signature with a worked example.

Also in contract 3 (an addition, which alone would need no version bump): ``matrix_unit``,
``MatrixUnit``, ``MatrixUnitModel`` and ``MATRIX_UNITS``, the block-FMA matrix units of real GPUs
(``docs/matrix-units.md``); and ``AuditContext.run_slot(cost)``, which a protocol holds while
a run simulates, so that an audit's runs share the cores one per core, the costliest first.
Also additions: the number-format and rounding functions (``round_float``, ``round_fixed``,
``fixed_to_float``, ``carrier_for``, ``classify``, ``fixed_add`` / ``fixed_sub`` / ``fixed_mul``,
``shift_round``, ``FORMATS``, ``parse_format``; ``docs/numerics.md``), the emulating ops namespace
(``emulating_ops``, ``unwrap``; ``docs/profiles.md``) and ``NumpyOps``, the numpy ops namespace an
engine may reuse. The functions that compute with numpy are loaded on first use (PEP 562), so a
plugin importing this module stays cheap to load.
Further additions: ``load_inputs`` / ``InputOps`` (an engine hands a step its inputs through
``load_inputs``, so that an emulation rounds arithmetic on them), ``PublishedTiming`` (a chip's
published speed, ``DeviceSpec.published_timing``), ``RunSummary.native`` and ``MetricInfo.units``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hwbench.accuracy.numerics.emulated_array import unwrap
from hwbench.accuracy.numerics.emulated_device import EmulatedDevice, KnobbedDevice, emulated_executor
from hwbench.accuracy.numerics.formats import (
    FORMATS,
    FixedFormat,
    FloatFormat,
    RoundingMode,
    custom_float,
    get_format,
    parse_format,
)
from hwbench.accuracy.numerics.matrix_unit import MATRIX_UNITS, MatrixUnit, matrix_unit
from hwbench.accuracy.numerics.matrix_unit_model import MatrixUnitModel
from hwbench.accuracy.numerics.presets import Knob
from hwbench.accuracy.numerics.profile import Confidence, ErrorModel, NumericsProfile, OpNumerics
from hwbench.core.activity import Activity, Structure, connection_activity, layer_activity
from hwbench.core.audit_protocol import AuditContext, AuditProtocol, AuditSettings, Candidate, Compared, ProtocolInfo
from hwbench.core.audit_report import AuditReport, CandidateVerdict, ProtocolReport, RunSummary, Verdict, combine
from hwbench.core.contract import CONTRACT_VERSION
from hwbench.core.device import Device, DeviceKind, DeviceSpec, ProbeResult, RunRequest, Support
from hwbench.core.energy import EnergyReading, PublishedEnergy
from hwbench.core.engine import (
    Engine,
    Executor,
    InputOps,
    OpsWrapper,
    RunOutput,
    SteppedOps,
    kernel_params,
    load_inputs,
)
from hwbench.core.engines.numpy_engine import NumpyOps
from hwbench.core.engines.replay import replay
from hwbench.core.engines.select import pick_engine
from hwbench.core.errors import (
    EXIT_CHECK_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CheckFailed,
    HwbenchError,
    PluginError,
    UnavailableError,
    UsageError,
)
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, KernelInfo, SpikeRule, Workload
from hwbench.core.metric import Metric, MetricInfo, evaluate
from hwbench.core.ops import OPS_FUNCTIONS, OpClass, Ops
from hwbench.core.plugins import get_registry, load_registry
from hwbench.core.protocol_facts import AuditFacts, AuditFloors, SpikeTrainFacts, StressFacts, ValidationFacts
from hwbench.core.published import PublishedTiming
from hwbench.core.scenario import Trace

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.emulate import emulating_ops
    from hwbench.accuracy.numerics.fixed import fixed_add, fixed_mul, fixed_sub, shift_round
    from hwbench.accuracy.numerics.rounding import carrier_for, classify, fixed_to_float, round_fixed, round_float

# Names whose modules import numpy at module level: loaded on first use (see the docstring).
_LAZY = {
    "emulating_ops": "hwbench.accuracy.numerics.emulate",
    "fixed_add": "hwbench.accuracy.numerics.fixed",
    "fixed_mul": "hwbench.accuracy.numerics.fixed",
    "fixed_sub": "hwbench.accuracy.numerics.fixed",
    "shift_round": "hwbench.accuracy.numerics.fixed",
    "carrier_for": "hwbench.accuracy.numerics.rounding",
    "classify": "hwbench.accuracy.numerics.rounding",
    "fixed_to_float": "hwbench.accuracy.numerics.rounding",
    "round_fixed": "hwbench.accuracy.numerics.rounding",
    "round_float": "hwbench.accuracy.numerics.rounding",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hwbench.api' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CONTRACT_VERSION",
    "EXIT_CHECK_FAILED",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "FORMATS",
    "MATRIX_UNITS",
    "OPS_FUNCTIONS",
    "Activity",
    "AuditContext",
    "AuditFacts",
    "AuditFloors",
    "AuditProtocol",
    "AuditReport",
    "AuditSettings",
    "Candidate",
    "CandidateVerdict",
    "CheckFailed",
    "Compared",
    "Confidence",
    "Device",
    "DeviceKind",
    "DeviceSpec",
    "EmulatedDevice",
    "EnergyReading",
    "Engine",
    "ErrorModel",
    "Executor",
    "FixedFormat",
    "FloatFormat",
    "HwbenchError",
    "InputOps",
    "Kernel",
    "KernelInfo",
    "Knob",
    "KnobbedDevice",
    "MatrixUnit",
    "MatrixUnitModel",
    "Metric",
    "MetricInfo",
    "NumericsProfile",
    "NumpyOps",
    "OpClass",
    "OpNumerics",
    "Ops",
    "OpsWrapper",
    "PluginError",
    "ProbeResult",
    "ProtocolInfo",
    "ProtocolReport",
    "PublishedEnergy",
    "PublishedTiming",
    "RoundingMode",
    "RunOutput",
    "RunRequest",
    "RunSummary",
    "SpikeRule",
    "SpikeTrainFacts",
    "SteppedOps",
    "StressFacts",
    "Structure",
    "Support",
    "Trace",
    "UnavailableError",
    "UsageError",
    "ValidationFacts",
    "Verdict",
    "Workload",
    "carrier_for",
    "classify",
    "combine",
    "connection_activity",
    "custom_float",
    "emulated_executor",
    "emulating_ops",
    "evaluate",
    "fixed_add",
    "fixed_mul",
    "fixed_sub",
    "fixed_to_float",
    "get_format",
    "get_registry",
    "hookimpl",
    "kernel_params",
    "layer_activity",
    "load_inputs",
    "load_registry",
    "matrix_unit",
    "parse_format",
    "pick_engine",
    "replay",
    "round_fixed",
    "round_float",
    "shift_round",
    "unwrap",
]
