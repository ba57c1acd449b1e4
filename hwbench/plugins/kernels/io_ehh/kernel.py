"""``io-ehh``: the inferior-olive extended Hodgkin-Huxley network kernel (spec: docs/io-ehh.md).

The kernel object ties the pieces together: :mod:`.model` (the cell equations, written against
the ops interface), :mod:`.network` (seeded torus connectivity) and the workload (parameters,
connectivity, initial state) that fixes a run so two machines can repeat it exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.activity import Activity
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, KernelInfo, ParamRange, SpikeRule, Workload
from hwbench.core.ops import OpClass, Ops
from hwbench.core.protocol_facts import AuditFacts, AuditFloors, StressFacts, ValidationFacts
from hwbench.plugins.kernels.io_ehh import model, network

# Network-shape options accepted by make_workload next to the cell parameters.
NETWORK_OPTIONS: dict[str, float] = {"mean_degree": network.DEFAULT_MEAN_DEGREE, "rmax": network.DEFAULT_RMAX}

# The seed the study (Landsmeer et al. 2024) gives numpy's global generator before drawing its
# network; the published protocols default to it (hwbench.core.bench.STUDY_SEED, the same value).
STUDY_SEED = 42

# What meta records about the network: whose generator, and which numbering src/tgt/state use.
GENERATOR = "ioperf sample_connections_3d (the study's; docs/io-ehh.md)"
CELL_NUMBERING = "cell numbers by partner count; annotations['position'] = grid index x + n*y + n*n*z"

# Spikes are somatic Na action potentials, i.e. upward crossings of 0 mV. In traces of the spike
# stress protocol (64 cells, g_CaL 0.5 + 0.9 U(0,1), 50 ms I_app ~ N(10, 3) pulses) full spikes
# peak at +7..+35 mV and a few at only +1..+4 mV (the lowest peak in each of four drawings of
# g_CaL and pulse: +1.0, +1.4, +3.2, +4.0 mV), while subthreshold oscillations (-65..-41 mV), the
# plateau wiggles after a spike (up to about -12 mV) and abortive spikes from a depolarised state
# (up to about -3 mV) stay below: 0 mV sits in that empty gap, so numerical deviations well below
# 1 mV do not flip a detection. (Re-checked by tests/kernels/test_io_ehh_physiology.py.)
# Those drawings were on hwbench's former network generator. On the study's own network (seed 42)
# the test's drawing has an abortive spike of an unpulsed cell that peaks at -0.02 mV, 100 ms after
# the pulse: on that network the gap can be far narrower, and a deviation of that size can add a spike.
SPIKE_THRESHOLD_MV = 0.0

# Floating-point operations of one step, counted from the equations in model.py: arithmetic
# (+ - * /, negation, the KCa gate's compare (its select is free); x**k as k-1 multiplies) and
# exp apart. A connected cell adds the g_gj product and the subtraction of its gap-junction
# current; each directed junction costs the difference of two gathered voltages, the Cx36 map
# and its exp. The scatter-add's sums are not counted (they depend on the lowering).
# tests/kernels/test_io_ehh_model.py re-derives all five from the traced computation.
ARITH_PER_CELL = 236
EXP_PER_CELL = 21
ARITH_PER_CONNECTED_CELL = 2
ARITH_PER_JUNCTION = 7
EXP_PER_JUNCTION = 1

# Memory estimate (IoEhhKernel.memory_estimate): the network generator's peak per directed junction
# (measured 80-100 bytes at 216,000 and 10^6 cells).
BYTES_PER_JUNCTION = 128

# What one synaptic event is for io-ehh (the HPC-benchmarking guide asks every figure to say it).
SYNAPTIC_EVENT = (
    "one gap-junction exchange per direction per step: each directed junction (src -> tgt) passes the "
    "voltage difference once per step, so an undirected pair of coupled cells is 2 events per step"
)

# Valid values of every parameter `--set` may change (checked by Kernel.check_parameters before a
# workload is built). Conductances are non-negative; the compartment ratios p1, p2 divide (p1, p2,
# 1 - p2), so they lie strictly inside (0, 1); S = 1/C_m is positive; reversal potentials stay in a
# physical +-200 mV; the explicit Euler step needs 0 < dt <= 1 ms (the model is stiff well below
# that; the audit's dt refinement goes to dt/100). Network shape: rmax > 1 grid step, or no cell
# has a partner.
_CONDUCTANCE = ParamRange(0.0, 1e4, unit="mS/cm^2")
_POTENTIAL = ParamRange(-200.0, 200.0, unit="mV")
PARAMETER_RANGES: dict[str, ParamRange] = {
    **{k: _CONDUCTANCE for k in model.DEFAULT_PARAMS if k.startswith("g_")},
    **{k: _POTENTIAL for k in model.DEFAULT_PARAMS if k.startswith("V_")},
    "p1": ParamRange(0.0, 1.0, low_open=True, high_open=True),
    "p2": ParamRange(0.0, 1.0, low_open=True, high_open=True),
    "S": ParamRange(0.0, 1e3, low_open=True, unit="cm^2/uF"),
    "dt": ParamRange(0.0, 1.0, low_open=True, unit="ms", per_cell=False),
    "mean_degree": ParamRange(0.0, 100.0, per_cell=False),
    "rmax": ParamRange(1.0, 50.0, low_open=True, unit="grid steps", per_cell=False),
}

STUDY = "Landsmeer et al., Neurocomputing 2024 (docs/io-ehh.md)"

# The study's two accuracy protocols. Validation: a connected 729-cell (9^3) network for 10 s,
# I_app = 0, somatic voltage every 1 ms. Stress: 64 cells (4^3), g_CaL per cell 0.5 + 0.9 U(0, 1),
# 5 s warm-up, then 10 x (50 ms pulse of I_app ~ N(10, 3) uA/cm^2 to a random third of the cells,
# drawn with replacement; 950 ms rest). The --quick variants are hwbench's (stated in reports).
AUDIT = AuditFacts(
    validation=ValidationFacts(
        size=9**3, quick_size=5**3, ms=10_000.0, quick_ms=2_000.0, drive="I_app", source=f"{STUDY}, validation"
    ),
    stress=StressFacts(
        size=4**3,
        drive="I_app",
        amplitude_mean=10.0,
        amplitude_sd=3.0,
        fraction=1 / 3,
        warmup_ms=5_000.0,
        pulses=10,
        pulse_ms=50.0,
        rest_ms=950.0,
        quick_warmup_ms=1_000.0,
        quick_pulses=3,
        heterogeneous={"g_CaL": (0.5, 0.9)},
        source=f"{STUDY}, spike stress test",
    ),
    # Absolute floors in mV (the probe is V_soma): 1 uV outside spikes is irrelevant for a membrane
    # that swings over 100 mV; a 1 mV ensemble spread marks the stable regime (docs/audit.md).
    # a sweep's cells run the stress test unless told otherwise (the study's sensitivity protocol)
    sweep_protocols=["stress"],
    floors=AuditFloors(
        max_outside_spikes=1e-3, stable_spread=1.0, source="hwbench's (docs/audit.md, absolute floors), in mV"
    ),
)


class IoEhhKernel(Kernel):
    """Inferior-olive cells (soma, axon, dendrite; 14 state variables) with Cx36 gap junctions."""

    info = KernelInfo(
        name="io-ehh",
        summary="Inferior-olive extended Hodgkin-Huxley network (De Gruijl 2012), 3-D torus gap junctions",
        family="conductance",
        state_names=list(model.STATE_NAMES),
        probe="V_soma",
        probe_unit="mV",
        op_classes=[
            OpClass.ADD,
            OpClass.MUL,
            OpClass.DIV,
            OpClass.EXP,
            OpClass.POW,
            OpClass.COMPARE,
            OpClass.GATHER,
            OpClass.STORE,
        ],
        dt_ms=model.DEFAULT_PARAMS["dt"],
        sample_every=40,
        dt_param="dt",
        ensemble_rows=[model.STATE_NAMES.index(v) for v in ("V_soma", "V_axon", "V_dend")],
        default_size=9**3,
        audit=AUDIT,
        sources=[
            "De Gruijl et al., PLoS Comput Biol 8(12) e1002814 (2012) - cell model",
            "Negrello et al., PLoS Comput Biol 15(5) e1006475 (2019) - network",
            "Landsmeer, Engelen, Miedema, Strydis, Neurocomputing (2024) 127953 - AI-chip benchmark",
        ],
    )
    spike_rule = SpikeRule(row=model.ROW["V_soma"], threshold=SPIKE_THRESHOLD_MV)
    reports = ("activity", "synaptic-events")
    parameter_ranges = PARAMETER_RANGES

    # ------------------------------------------------------------------------ workload
    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        """A seeded network of ``size`` cells.

        ``overrides`` sets any cell parameter (:data:`model.DEFAULT_PARAMS`) to a scalar or a
        per-cell array of length ``size``, and the network shape (``mean_degree``, ``rmax``).
        Connected networks need ``size == n**3`` (n >= 4); unconnected ones accept any size.
        A connected network numbers its cells by partner count (most first) and annotates each
        with its grid index (``annotations["position"]``, see :mod:`.network`).
        The network is the study's for ``seed`` (ioperf ``sample_connections_3d`` after
        ``np.random.seed(seed)``; the published protocols use :data:`STUDY_SEED`). The voltages
        start N(-60, 3) mV per cell, from a stream of ``seed`` independent of the network's, so the
        same seed gives the same cells with or without connectivity.
        """
        import numpy as np

        self.check_size(size, connected=connected)
        self.check_parameters(overrides)
        size = int(size)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
            raise UsageError(
                f"io-ehh seed must be an integer in 0 .. 2**32 - 1 (numpy's legacy generator), got {seed!r}"
            )
        net = dict(NETWORK_OPTIONS)
        params: dict[str, Any] = dict(model.DEFAULT_PARAMS)
        for key, value in overrides.items():
            if key in net:
                net[key] = float(value)
            elif key in params:
                params[key] = _parameter_value(key, value, size)
            elif key == "I_app":
                raise UsageError("io-ehh: I_app is an input, not a parameter; pass inputs={'I_app': ...} to run()")
            else:
                allowed = ", ".join([*model.DEFAULT_PARAMS, *NETWORK_OPTIONS])
                raise UsageError(f"io-ehh has no parameter '{key}'; choose from: {allowed}")

        _, state_seq = np.random.SeedSequence(seed).spawn(2)
        arrays: dict[str, np.ndarray] = {}
        annotations: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {"connected": bool(connected), "seed": int(seed)}
        if connected:
            side = network.side_for_connected(size)
            src, tgt, position = network.sample_gap_junctions(
                side, seed, mean_degree=net["mean_degree"], rmax=net["rmax"]
            )
            arrays = {"src": src, "tgt": tgt}
            annotations = {"position": position}
            meta.update(side=side, mean_degree=net["mean_degree"], rmax=network.radius_cap(net["rmax"], side))
            meta.update(ngj=len(src), layout="pass-major by tgt", cell_order="by partner count, most first")
            meta.update(generator=GENERATOR, cell_numbering=CELL_NUMBERING)
        state0 = initial_state(size, np.random.default_rng(state_seq))
        return Workload("io-ehh", size, meta, params, arrays, state0, annotations)

    def check_size(self, size: int, *, connected: bool = True) -> None:
        """A positive integer; connected networks need a cube n^3 with n >= 4 (see :mod:`.network`)."""
        import numpy as np

        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise UsageError(f"io-ehh size must be a positive integer number of cells, got {size!r}")
        if connected:
            network.side_for_connected(int(size))

    def check_shards(
        self, size: int, shards: int, *, connected: bool = True, overrides: dict[str, Any] | None = None
    ) -> None:
        """A connected network splits into slabs of whole z-planes of its n x n x n torus: the count
        must divide n and leave slabs at least as thick as a gap junction reaches (ceil(rmax) - 1
        planes), so that every junction joins a slab to itself or a neighbour. An unconnected one
        splits into equal runs of cells."""
        self.check_size(size, connected=connected)
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise UsageError(f"--shard must be a positive integer number of devices, got {shards!r}")
        if not connected:
            if size % shards:
                counts = ", ".join(str(d) for d in _divisors(size, 64))
                raise UsageError(f"--shard {shards} does not divide {size:,} unconnected cells; choose from: {counts}")
            return
        n = network.side_for_connected(size)
        rmax = float((overrides or {}).get("rmax", network.DEFAULT_RMAX))
        reach = shard_reach(n, rmax)
        allowed = [d for d in _divisors(n) if d == 1 or n // d >= reach]
        if shards not in allowed:
            why = (
                "does not divide"
                if n % shards
                else f"leaves slabs thinner than the junctions' reach ({reach} planes) on"
            )
            raise UsageError(
                f"--shard {shards} {why} the {n}^3 torus of {size:,} cells (slabs of whole z-planes); "
                f"choose from: {', '.join(map(str, allowed))}"
            )

    def partition(self, workload: Workload, shards: int) -> np.ndarray:
        """Slabs of whole z-planes of the torus (``shards`` divides the side n), each cell by its
        grid position; an unconnected network in equal runs of cell numbers."""
        import numpy as np

        connected = bool(workload.meta.get("connected", True))
        self.check_shards(
            workload.size, shards, connected=connected, overrides={"rmax": workload.meta.get("rmax", 4.0)}
        )
        if not connected:
            return np.arange(workload.size) // (workload.size // shards)
        position = workload.annotations.get("position")
        if position is None or np.shape(position) != (workload.size,):
            raise UsageError("a connected io-ehh workload without its cells' grid positions cannot be sharded")
        n = network.side_for_connected(workload.size)
        z = np.asarray(position, dtype=np.int64) // (n * n)
        owner: np.ndarray = z // (n // shards)
        return owner

    def default_inputs(self, workload: Workload) -> dict[str, np.ndarray]:
        """``I_app`` (uA/cm^2, into the dendrite): zero unless a protocol applies a current."""
        import numpy as np

        return {"I_app": np.zeros(workload.size)}

    # ---------------------------------------------------------------------------- step
    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        return model.euler_step(ops, state, params, inputs["I_app"])

    # --------------------------------------------------------------------------- costs
    def flops_per_step(self, workload: Workload) -> float:
        """Arithmetic operations per step, exp counted as one (see ARITH_/EXP_PER_* for the split)."""
        ngj = len(workload.arrays.get("src", ()))
        per_cell = ARITH_PER_CELL + EXP_PER_CELL + (ARITH_PER_CONNECTED_CELL if ngj else 0)
        return float(workload.size * per_cell + ngj * (ARITH_PER_JUNCTION + EXP_PER_JUNCTION))

    def activity(self, workload: Workload, steps: int) -> Activity:
        """Synaptic events of ``steps`` steps: every directed gap junction, every step (see SYNAPTIC_EVENT).

        Gap junctions are electrical and continuous, so the count does not depend on the dynamics.
        """
        ngj = len(workload.arrays.get("src", ()))
        return Activity(
            steps=steps,
            synaptic_events=ngj * steps,
            synaptic_event_convention=SYNAPTIC_EVENT,
            recorded_by="counted from the connectivity (directed junctions x steps)",
        )

    def bytes_per_step(self, workload: Workload) -> float:
        """Minimum memory traffic of one fused float32 step.

        State read and written (14 rows), per-cell parameter arrays and the input read once;
        per directed junction two int32 indices and two gathered voltages.
        """
        import numpy as np

        per_cell_arrays = sum(1 for v in workload.params.values() if np.ndim(v) > 0)
        ngj = len(workload.arrays.get("src", ()))
        return float(4 * workload.size * (2 * len(model.STATE_NAMES) + per_cell_arrays + 1) + ngj * (2 * 4 + 2 * 4))

    def memory_estimate(self, size: int, *, connected: bool = True) -> int:
        """Bytes of a workload and one run's working arrays, traces and the engine itself apart (an upper bound).

        Per cell, at float64: the initial state and an engine's input and output state (3 x 14), every
        parameter as a per-cell array, and 40 elementwise temporaries of a step: 840 bytes. Per
        directed junction, 128 bytes: the network generator's transient arrays (measured 80-100 bytes
        per junction while the network is generated), which outweigh the kept int32 src/tgt and a
        step's per-junction temporaries. The host guard adds the engine's fixed bytes
        (:data:`hwbench.core.runner.ENGINE_WORKING_BYTES`). Measured peaks (``hwbench bench`` reports
        them per size): JAX and numpy, float32 and float64, 370-590 bytes per cell unconnected and
        about 900 connected at 216,000-1,000,000 cells, 0.1-0.15 GiB fixed; the guard's figure is 2.3-2.5x
        those at 10^6 cells (docs/bench.md). The traces of a run are estimated apart
        (:func:`hwbench.core.runner.trace_bytes`), since they depend on its length.
        """
        per_cell = 8 * (3 * len(model.STATE_NAMES) + len(model.DEFAULT_PARAMS) + 40)
        ngj = network.DEFAULT_MEAN_DEGREE * size if connected else 0
        return int(size * per_cell + ngj * BYTES_PER_JUNCTION)


def shard_reach(n: int, rmax: float) -> int:
    """How many z-planes a gap junction spans at most: offsets have r < rmax (capped as the network
    caps it), so |dz| <= ceil(rmax) - 1."""
    import math

    return max(0, math.ceil(network.radius_cap(rmax, n)) - 1)


def _divisors(n: int, most: int | None = None) -> list[int]:
    return [d for d in range(1, min(n, most or n) + 1) if n % d == 0]


def initial_state(size: int, rng: np.random.Generator) -> np.ndarray:
    """The spec's initial state (14, size), voltages drawn N(-60, 3) mV per cell."""
    import numpy as np

    state = np.empty((len(model.STATE_NAMES), size))
    for i, name in enumerate(model.STATE_NAMES):
        if name.startswith("V_"):
            state[i] = rng.normal(-60.0, 3.0, size)
        else:
            state[i] = model.INITIAL_STATE[name]
    return state


def _parameter_value(key: str, value: Any, size: int) -> Any:
    """A scalar float or a float64 array of shape (size,); anything else is a UsageError."""
    import numpy as np

    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        message = f"io-ehh parameter '{key}' must be a number or an array of numbers, got {value!r:.60}"
        raise UsageError(message) from None
    if arr.ndim == 0:
        return float(arr)
    if arr.shape != (size,):
        raise UsageError(f"io-ehh parameter '{key}' must be a scalar or have shape ({size},), got {arr.shape}")
    return arr
