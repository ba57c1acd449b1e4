"""The Kernel contract: a workload written once against :mod:`hwbench.core.ops`.

A kernel says what its state is, how to build a seeded workload of a given size, how one time
step updates the state, what to probe, and how much arithmetic and memory traffic a step costs.
Engines compile many steps of ``step`` into one call; the accuracy layer runs the same ``step``
under an emulating ops namespace.
"""

from __future__ import annotations

import json
import math
import zipfile
import zlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np
from pydantic import BaseModel, Field

from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.files import OutputFiles, check_input_file
from hwbench.core.ops import OpClass, Ops
from hwbench.core.protocol_facts import AuditFacts

if TYPE_CHECKING:
    from hwbench.core.activity import Activity, Structure

WORKLOAD_FORMAT = "hwbench-workload/1"


class KernelInfo(BaseModel):
    """What ``hwbench kernels`` shows and what devices consult in ``supports()``."""

    name: str
    summary: str
    family: str = Field(description="dynamics family: 'conductance' (HH-type), 'lif', 'dl', ...")
    state_names: list[str]
    probe: str = Field(description="the signal sampled every `sample_every` steps")
    probe_unit: str = Field("", description="the probe's unit, shown with its deviations (e.g. 'mV')")
    op_classes: list[OpClass]
    dt_ms: float | None = None
    sample_every: int = 1
    sources: list[str] = []
    dt_param: str | None = Field(
        None,
        description="the workload parameter that sets the time step in ms (None: a discrete-time kernel, "
        "for which dt refinement does not apply)",
    )
    ensemble_rows: list[int] | None = Field(
        None,
        description="state rows the audit's '+1 ulp' ensemble member perturbs (default: the probed row); "
        "e.g. every compartment's voltage",
    )

    default_size: int = Field(1000, gt=0, description="the size commands use when none is given (cells, neurons)")
    audit: AuditFacts = Field(
        default_factory=AuditFacts,
        description="the accuracy protocols this kernel declares (sizes, drive, what varies per cell) "
        "and why the others do not apply",
    )

    def step_ms(self, params: dict[str, Any]) -> float:
        """The time step of a workload with ``params``, in ms: its :attr:`dt_param` where the kernel has
        one (``--set dt=...`` changes it), else :attr:`dt_ms` (1 ms for a kernel that declares none)."""
        import numpy as np

        if self.dt_param is not None and self.dt_param in params and np.ndim(params[self.dt_param]) == 0:
            return float(params[self.dt_param])
        return self.dt_ms or 1.0

    def perturbed_rows(self) -> list[int]:
        """The rows of :attr:`ensemble_rows`, or the probed row when the kernel names none."""
        if self.ensemble_rows is not None:
            return list(self.ensemble_rows)
        return [self.state_names.index(self.probe)] if self.probe in self.state_names else [0]


@dataclass
class SpikeRule:
    """Spikes are upward crossings of ``threshold`` by state row ``row``, detected every step."""

    row: int
    threshold: float


@dataclass
class Workload:
    """Everything that fixes a run: parameters, connectivity, initial state, seed.

    Arrays live in ``arrays`` (saved to ``.npz``); scalars and descriptive metadata in ``meta``
    (saved as JSON inside the same file), so two machines can run exactly the same network.
    ``annotations`` are arrays that describe the workload to people (e.g. where each cell sits
    on its grid) but are no kernel parameters: engines and device models never see them.
    """

    kernel: str
    size: int
    meta: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    state0: Any = None
    annotations: dict[str, np.ndarray] = field(default_factory=dict)

    def save(self, path: str | Path, files: OutputFiles | None = None) -> Path:
        """Write the ``.npz`` atomically (see :mod:`hwbench.core.files`); with ``files``, only stage it."""
        import numpy as np

        path = Path(path)
        scalars = {k: v for k, v in self.params.items() if np.ndim(v) == 0}
        # Any values: numpy's stubs type savez's **kwds against its allow_pickle keyword
        payload: dict[str, Any] = {f"param__{k}": np.asarray(v) for k, v in self.params.items() if np.ndim(v) > 0}
        payload.update({f"array__{k}": v for k, v in self.arrays.items()})
        payload.update({f"annotation__{k}": v for k, v in self.annotations.items()})
        states = self.state0 if isinstance(self.state0, (tuple, list)) else [self.state0]
        payload.update({f"state__{i}": np.asarray(s) for i, s in enumerate(states)})
        header = {
            "format": WORKLOAD_FORMAT,
            "kernel": self.kernel,
            "size": self.size,
            "meta": self.meta,
            "scalars": {k: float(v) for k, v in scalars.items()},
            "state_is_sequence": isinstance(self.state0, (tuple, list)),
        }
        head = np.frombuffer(json.dumps(header).encode(), np.uint8)
        if files is not None:  # staged: appears when the caller's set of outputs is committed
            return files.write(path, lambda fh: np.savez_compressed(fh, __header__=head, **payload))
        with OutputFiles() as own:
            own.write(path, lambda fh: np.savez_compressed(fh, __header__=head, **payload))
        return path

    @classmethod
    def load(cls, path: str | Path) -> Workload:
        """Read a saved workload; anything wrong with the file is one UsageError naming it.

        The arrays' sizes are read from their ``.npy`` headers first, so a file that claims more
        cells than its arrays hold, or whose arrays would not fit in memory, is refused before
        anything is allocated.
        """
        import numpy as np

        path = Path(path)
        check_input_file(path, "workload file")
        try:  # everything is read here, so a damaged file fails as one usage error
            shapes = _npz_shapes(path)
            with np.load(path, allow_pickle=False) as data:
                header = json.loads(bytes(data["__header__"]).decode())
                _check_header(path, header, shapes)
                contents = {key: data[key] for key in data.files if key != "__header__"}
        except (
            OSError, ValueError, KeyError, EOFError, RecursionError, zipfile.BadZipFile, zlib.error, UnicodeDecodeError
        ) as exc:  # fmt: skip
            raise UsageError(f"{path}: not a hwbench workload file ({exc.__class__.__name__})") from None
        groups: dict[str, dict[str, np.ndarray]] = {"param": {}, "array": {}, "annotation": {}, "state": {}}
        for key, value in contents.items():
            group, _, name = key.partition("__")
            if group in groups:
                groups[group][name] = value
        try:
            params: dict[str, Any] = {**header["scalars"], **groups["param"]}
            states = [groups["state"][str(i)] for i in range(len(groups["state"]))]
            state0: Any = tuple(states) if header["state_is_sequence"] else states[0]
            return cls(
                header["kernel"], header["size"], header["meta"], params, groups["array"], state0, groups["annotation"]
            )
        except (KeyError, IndexError, TypeError) as exc:
            raise UsageError(f"{path}: incomplete hwbench workload file (missing {exc})") from None


def _npz_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Each member's shape from its ``.npy`` header; refuses (exit 4) arrays that cannot fit in memory."""
    import numpy as np

    from hwbench.core.host import GIB, available_memory_bytes

    shapes: dict[str, tuple[int, ...]] = {}
    total = 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(fh)
            if dtype.hasobject:
                raise ValueError("object arrays are not allowed")
            shapes[info.filename.removesuffix(".npy")] = tuple(shape)
            total += int(np.prod(shape, dtype=object)) * dtype.itemsize
    have = available_memory_bytes()
    if total > 0.8 * have:
        raise UnavailableError(
            f"{path}: its arrays need about {total / GIB:.1f} GiB; this host has {have / GIB:.1f} GiB available"
        )
    return shapes


def _check_header(path: Path, header: Any, shapes: dict[str, tuple[int, ...]]) -> None:
    """The format tag, a positive integer size, and a first state array that holds ``size`` cells."""
    if not isinstance(header, dict) or header.get("format") != WORKLOAD_FORMAT:
        found = header.get("format") if isinstance(header, dict) else None
        raise UsageError(f"{path}: workload format {found!r}, expected {WORKLOAD_FORMAT!r}")
    size = header.get("size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise UsageError(f"{path}: workload size must be a positive integer, got {size!r}")
    state = shapes.get("state__0")
    if state is None:
        raise UsageError(f"{path}: incomplete hwbench workload file (no initial state)")
    if not state or state[-1] != size:
        held = state[-1] if state else 0
        raise UsageError(f"{path}: header says {size:,} cells but the initial state holds {held:,}")


@dataclass(frozen=True)
class ParamRange:
    """The valid values of a numeric kernel parameter: finite, within [low, high] (ends open if set).

    A kernel declares one per parameter in :attr:`Kernel.parameter_ranges`; the runner checks
    ``--set`` overrides and loaded workloads against them before building anything, so every
    kernel's parameters are refused the same way, with the same one-line message.
    """

    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False
    unit: str = ""
    per_cell: bool = True  # a per-cell array of length ``size`` is accepted as well as a scalar

    def describe(self) -> str:
        """E.g. ``a finite number > 0 (ms)``: what the CLI table and the error message say."""
        parts = []
        if self.low > -math.inf:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high < math.inf:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        text = "a finite number" + (" " + " and ".join(parts) if parts else "")
        return text + (f" ({self.unit})" if self.unit else "")

    def contains(self, values: np.ndarray) -> bool:
        import numpy as np

        v = np.asarray(values, dtype=np.float64)
        if not np.isfinite(v).all():
            return False
        low_ok = v > self.low if self.low_open else v >= self.low
        high_ok = v < self.high if self.high_open else v <= self.high
        return bool(np.all(low_ok & high_ok))


def describe_choices(choices: tuple[str, ...]) -> str:
    """``'subtract' or 'zero'``: what the CLI table and the error message say of a word parameter."""
    return " or ".join(f"'{c}'" for c in choices)


class Kernel(ABC):
    """A simulation or AI workload. Subclasses are registered through ``hwbench_kernels``."""

    info: KernelInfo
    spike_rule: SpikeRule | None = None
    reports: tuple[str, ...] = ()
    """What :meth:`structure` / :meth:`activity` fill in (names from :data:`hwbench.core.activity.REPORTS`);
    metrics that require one of them apply to this kernel. Empty: the kernel reports neither."""

    parameter_ranges: ClassVar[dict[str, ParamRange]] = {}
    """Valid values of the numeric parameters ``make_workload`` accepts (checked generically)."""

    parameter_choices: ClassVar[dict[str, tuple[str, ...]]] = {}
    """The words a word-valued parameter takes (``reset``: ``subtract`` or ``zero``), checked generically."""

    @property
    def name(self) -> str:
        return self.info.name

    @abstractmethod
    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        """Build a seeded workload. ``size`` is the kernel's natural size (cells, neurons)."""

    def check_size(self, size: int, *, connected: bool = True) -> None:
        """Raise a UsageError if no workload of ``size`` can be built, without building one.

        Lets the CLI refuse a bad size list up front instead of after hours of other sizes.
        The default accepts every size (``make_workload`` still checks its own arguments).
        """
        return None

    def check_parameters(self, overrides: dict[str, Any]) -> None:
        """Refuse (UsageError) an override outside its declared :class:`ParamRange`.

        Keys without a declared range or choices are left to ``make_workload``, which names unknown ones.
        """
        import numpy as np

        for key, value in overrides.items():
            choices = self.parameter_choices.get(key)
            if choices is not None and value not in choices:
                allowed = describe_choices(choices)
                raise UsageError(f"{self.name} parameter '{key}' must be {allowed}, got {_short(value)}")
            spec = self.parameter_ranges.get(key)
            if spec is None:
                continue
            try:
                arr = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError, OverflowError):
                arr = None
            if arr is None or (arr.ndim > (1 if spec.per_cell else 0)) or not spec.contains(arr):
                shape = " (or one per cell)" if spec.per_cell else ""
                raise UsageError(f"{self.name} parameter '{key}' must be {spec.describe()}{shape}, got {_short(value)}")

    def check_workload(self, workload: Workload) -> None:
        """Refuse a loaded workload this kernel cannot run: wrong kernel, bad parameters, non-finite state."""
        import numpy as np

        if workload.kernel != self.name:
            raise UsageError(f"workload file is for kernel '{workload.kernel}', not '{self.name}'")
        self.check_parameters({k: v for k, v in workload.params.items() if k in self.parameter_ranges})
        states = workload.state0 if isinstance(workload.state0, (tuple, list)) else [workload.state0]
        for i, s in enumerate(states):
            arr = np.asarray(s)
            if arr.dtype.kind not in "biuf" or not np.isfinite(arr).all():
                raise UsageError(f"workload initial state {i} must hold finite numbers only (found NaN, inf or text)")

    @abstractmethod
    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        """Advance ``state`` by one time step. ``t`` is the step index inside the current call.

        ``params`` is :func:`hwbench.core.engine.kernel_params` of the workload: parameters and
        arrays as engine arrays, plus ``n`` (the size, a Python int). Write it as plain
        arithmetic plus ``ops`` calls, with no Python branching on array values, so that every
        engine can compile it and every numerics profile can round it.
        """

    def check_shards(
        self, size: int, shards: int, *, connected: bool = True, overrides: dict[str, Any] | None = None
    ) -> None:
        """Refuse (UsageError, saying what is allowed) a split of ``size`` cells over ``shards``
        devices, before any workload is built. The default: this kernel cannot be split."""
        raise UsageError(f"kernel '{self.name}' cannot be sharded over devices (it does not partition its cells)")

    def partition(self, workload: Workload, shards: int) -> np.ndarray:
        """Which of ``shards`` equal parts each cell of ``workload`` belongs to (int array, one per cell).

        A sharded run (:mod:`hwbench.core.sharding`) puts each part on its own device; a cell's
        connections may only read cells of its own part and of the parts numbered one below and
        one above (mod ``shards``): slabs of a torus, say. A kernel that overrides it overrides
        :meth:`check_shards` too; the defaults refuse.
        """
        raise UsageError(f"kernel '{self.name}' cannot be sharded over devices (it does not partition its cells)")

    def probe(self, state: Any) -> Any:
        """The sampled signal (default: row 0 of the state)."""
        return state[0]

    def default_inputs(self, workload: Workload) -> dict[str, np.ndarray]:
        """Inputs that may change between calls (e.g. applied current); none by default."""
        return {}

    def flops_per_step(self, workload: Workload) -> float:
        """Floating-point operations per step (for FLOPS and roofline metrics)."""
        return float("nan")

    def bytes_per_step(self, workload: Workload) -> float:
        """Bytes of state and parameters touched per step."""
        return float("nan")

    def memory_estimate(self, size: int, *, connected: bool = True) -> int:
        """Bytes a workload of this size needs in host memory (the memory guard uses it)."""
        return 0

    def structure(self, workload: Workload, *, dtype: str = "float32") -> Structure | None:
        """Static facts of the network (parameters, footprint, zero weights), or None if not reported.

        ``dtype`` is the working precision of the run; parameter bytes are counted at it.
        """
        return None

    def activity(self, workload: Workload, steps: int) -> Activity | None:
        """What ``steps`` steps of this workload do (spikes and membrane updates per layer, synaptic
        operations per connection, synaptic events), or None if not reported.

        Helpers in :mod:`hwbench.core.activity` count by NeuroBench's rules;
        :func:`hwbench.core.engines.replay.replay` records the states of a reference run when the counts
        depend on the dynamics.
        """
        return None


def partitions(kernel: Kernel) -> bool:
    """Whether ``kernel`` says how to split its cells over devices (overrides :meth:`Kernel.partition`)."""
    return type(kernel).partition is not Kernel.partition


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
