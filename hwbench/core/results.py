"""Versioned result schemas: everything hwbench writes to disk is one of these pydantic models.

Each model has a ``schema`` literal naming its kind and version; ``hwbench schema NAME`` prints the
published JSON Schema. Files are written atomically (temporary file, then rename), so an
interrupted run never leaves a half-written result that looks complete.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from hwbench import __version__
from hwbench.core.activity import Activity, Structure
from hwbench.core.energy import EnergyReading
from hwbench.core.files import OutputFiles
from hwbench.core.host import host_cpu
from hwbench.core.published import PublishedTiming


# defer_build=True: pydantic builds such a model's validator when it is first used, not at import;
# hwbench --help (every command's module) imports this module and validates none of them (docs/cli.md, "Start-up time").
class HostInfo(BaseModel, defer_build=True):
    hostname: str
    platform: str
    python: str
    cpu: str
    cores: int

    @classmethod
    def here(cls) -> HostInfo:
        return cls(
            hostname=platform.node(),
            platform=platform.platform(),
            python=platform.python_version(),
            cpu=host_cpu(),
            cores=os.cpu_count() or 1,
        )


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class Provenance(BaseModel, defer_build=True):
    """Who produced a result, where, when — and whether the device was real or emulated."""

    hwbench_version: str = __version__
    created: str = Field(default_factory=now_iso)
    host: HostInfo = Field(default_factory=HostInfo.here)


class DLTiming(BaseModel, defer_build=True):
    """What a DL primitive's timing adds: configuration, precision, FLOPs and the peak used.

    Two FLOP figures: ``flops`` counts the operations actually computed, ``flops_paper`` the
    paper's printed formula (which differs for Conv2D and the LSTM; docs/dl-primitives.md).
    """

    config: str
    shape: dict[str, int]
    precision: str = Field(description="fp32, tf32, bf16 or fp16")
    precision_execution: Literal["real", "emulated"] = Field(
        description="'emulated' when the host has no such arithmetic (e.g. TF32 on a CPU: inputs rounded, fp32 product)"
    )
    batch_scaled_from: int | None = Field(None, description="the configuration's batch when a scale-down ran less")
    flops: float
    flops_paper: float
    flops_convention: str
    tflops: float = Field(description="flops / run_s / 1e12")
    tflops_paper: float
    peak_tflops: float | None = None
    peak_source: str | None = None
    fraction_of_peak: float | None = None


HOST_TIME = "this host's time to emulate the chip, not the chip's own time"
"""What an emulated timing measures, in the words every speed table and plot prints beside it."""


class Timing(BaseModel, defer_build=True):
    """One timed configuration of the performance protocol (or of a single run)."""

    kernel: str
    device: str
    mode: str
    execution: Literal["real", "emulated"] = Field(
        description=f"'real': the chip ran; 'emulated': the times are {HOST_TIME}"
    )
    engine: str
    dtype: str
    ncells: int
    ngj: int
    connected: bool
    setup_s: float = Field(description="allocation + compilation, reported apart from run time")
    run_s: float = Field(description="minimum wall time over the timed repeats, transfers included")
    run_s_all: list[float]
    simulated_ms: float | None = Field(description="biological time run (None: a DL primitive has none)")
    steps: int
    us_per_step: float
    rtf: float | None = Field(description="wall time / simulated time (1 = real time; < 1 faster; None for DL)")
    cell_steps_per_s: float
    structure: Structure | None = Field(None, description="the kernel's static report (NeuroBench static metrics)")
    activity: Activity | None = Field(None, description="the kernel's report of the timed steps (where it gives one)")
    energy: EnergyReading | None = Field(None, description="energy of the fastest repeat's timed phase")
    metrics: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="every registered performance, static, workload, energy metric that applies"
    )
    metric_errors: dict[str, str] = Field(default_factory=dict, description="metrics that raised, with the error")
    dl: DLTiming | None = Field(None, description="DL primitives only: configuration, precision, FLOPS, peak")
    published: list[PublishedTiming] = Field(
        default_factory=list, description="the real chip's speed as a study published it for this configuration"
    )


class RunResult(BaseModel, defer_build=True):
    schema_: Literal["hwbench.run/1"] = Field("hwbench.run/1", alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    timing: Timing
    profile: str | None = Field(None, description="numerics profile name when emulated")
    workload: dict[str, Any] = Field(default_factory=dict, description="kernel, size, seed, connected, overrides")
    sample_interval_ms: float
    probe: str
    probe_cells: list[int] = Field(
        description="the kernel's cell numbers (io-ehh: ranked by partner count; grid index in cell_annotations)"
    )
    cell_annotations: dict[str, list[int | float]] = Field(
        default_factory=dict,
        description="per probed cell, the workload's annotations (io-ehh: position = grid index x + n*y + n*n*z)",
    )
    traces: list[list[float]] = Field(
        default_factory=list, description="[sample][cell] probe values (null: non-finite, read back as NaN)"
    )
    spikes: list[list[int]] = Field(default_factory=list, description="[cell] spike step indices")
    counters: dict[str, int] = Field(default_factory=dict)

    model_config = {"populate_by_name": True}

    @field_validator("traces", mode="before")
    @classmethod
    def _nulls_are_non_finite(cls, value: Any) -> Any:
        """JSON has no NaN: a diverged run's non-finite samples are written as null and read back as NaN."""
        if not isinstance(value, list):
            return value
        return [[math.nan if v is None else v for v in row] if isinstance(row, list) else row for row in value]


class BenchResult(BaseModel, defer_build=True):
    schema_: Literal["hwbench.bench/1"] = Field("hwbench.bench/1", alias="schema")
    provenance: Provenance = Field(default_factory=Provenance)
    protocol: dict[str, Any] = Field(description="sizes, simulated ms, repeats, steps fused per call")
    timings: list[Timing]
    skipped: list[dict[str, Any]] = Field(default_factory=list, description="configurations refused, with reason")

    model_config = {"populate_by_name": True}


SCHEMAS: dict[str, type[BaseModel]] = {"run": RunResult, "bench": BenchResult}
"""Published result schemas by name; the audit report adds itself from hwbench.accuracy.report."""


def write_json(model: BaseModel, path: str | Path, files: OutputFiles | None = None) -> Path:
    """Write atomically (:mod:`hwbench.core.files`): a crash mid-write leaves no file that looks complete.

    With ``files``, the file is only staged and appears when that set is committed.
    """
    from hwbench.core.strict_json import dump_model

    text = dump_model(model, indent=1)  # RFC 8259: non-finite numbers as strings
    if files is not None:
        return files.write_text(path, text)
    with OutputFiles() as own:
        own.write_text(path, text)
    return Path(path)
