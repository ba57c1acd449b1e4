"""GroqChip TSP: fp32 adds and multiplies, reduced-precision everything else, one-hot gathers.

What the profiles emulate (sources and the reasoning behind every assumption:
``docs/devices/groq.md``):

* The vector ALUs take 32-bit operands; "with the exception of additions and multiplications,
  instructions are done in a reduced-precision FP32 format" (founding study, Sec. IV). So ADD
  and MUL are IEEE fp32, and EXP, DIV (and reciprocal), POW and — reading the sentence as
  written — COMPARE (min / max / select) round their results to a float with fp32's exponent
  range and ``reduced_mantissa_bits`` fraction bits. No public source gives that width: it is
  an assumed, overridable parameter (default 10, argued in the docs from the study's
  observations), as are its rounding and whether comparisons are reduced.
* The compiler lowers gather / scatter-add to dense one-hot matrix products on the matrix unit
  (study), whose inputs are fp16 and whose accumulation is fp32 (TSP paper): ``gather`` with
  ``lowering="one-hot-matmul"``, ``matmul_input`` fp16, ``matmul_accumulate`` fp32.
* Mode ``fp32-exact-vector`` keeps only the matrix-unit part (a sensitivity mode: how much of
  the deviation the one-hot gathers cause on their own).

Two routes run a kernel here. ``emulate`` (default): the kernel on the fastest local engine
under the profile's emulating ops. ``groqware`` (``engine="groqware"``, ``route="groqware"``,
or ``HWBENCH_GROQ_ROUTE=groqware``; always taken with a real chip): the GroqChip toolchain's
path — the kernel's fused sample block exported to ONNX by the ONNX engine's tf2onnx export,
compiled with ``groq-compiler`` + assembler, run through ``groq.runner.tsp`` — with the real
GroqWare SDK when present and otherwise :mod:`hwbench.plugins.groqware_shim`, which compiles
(lowering included) and interprets the program with the same profile.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwbench.accuracy.numerics.emulated_device import EmulatedDevice, emulated_executor
from hwbench.accuracy.numerics.presets import STUDY_TABLE, resolve_knobs
from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.core.device import DeviceSpec, ProbeResult, RunRequest, Support
from hwbench.core.engine import Executor, RunOutput, kernel_params
from hwbench.core.errors import UsageError, unknown_name
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, Workload
from hwbench.plugins.devices import _published_speed
from hwbench.plugins.groqware_shim import capacity
from hwbench.plugins.groqware_shim.numerics import MODE_KNOBS, MODES, build_profile
from hwbench.plugins.groqware_shim.sdk import LOOKED_FOR, real_sdk_status

if TYPE_CHECKING:
    from hwbench.core.device import Device

ARGONNE = (
    "Argonne AI-accelerator evaluation (Emani et al., 'A Comprehensive Evaluation of Novel AI Accelerators for "
    "Deep Learning Workloads', PMBS 2022): GroqCard 188 TFLOPS fp16, 750 TOPS int8, 230 MB SRAM, 80 TB/s on-chip"
)

ROUTES = ("emulate", "groqware")
ROUTE_ENV = "HWBENCH_GROQ_ROUTE"
GROQWARE_ENGINE = "groqware"
NON_FLOAT_FAMILIES = ("fixed-point",)
"""Kernel families whose arithmetic is not float32 graphs a tf2onnx export expresses (what the chip
runs); every other family — built-in or a user's — is accepted, subject to capacity."""


# ---------------------------------------------------------------------------------- capacity
class _OneHotCensus:
    """Counts what a kernel step gathers and scatters (numpy, one step): the one-hot products."""

    def __init__(self) -> None:
        import numpy as np

        from hwbench.core.engines.numpy_engine import NumpyOps

        self.ops = NumpyOps(np.float32)
        self.uses: list[capacity.OneHotUse] = []
        self._keys: dict[int, str] = {}

    def _key(self, kind: str, index: Any, shape: tuple[int, int]) -> str:
        import numpy as np

        arr = np.asarray(index)
        digest = self._keys.setdefault(id(index), str(hash(arr.tobytes())))
        return f"{kind}:{shape}:{digest}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ops, name)

    def gather(self, x: Any, index: Any) -> Any:
        import numpy as np

        rows, cols = int(np.shape(x)[-1]), int(np.size(index))
        self.uses.append(capacity.OneHotUse("gather", rows, cols, self._key("gather", index, (rows, cols))))
        return self.ops.gather(x, index)

    def scatter_add(self, values: Any, index: Any, size: int) -> Any:
        import numpy as np

        rows, cols = int(np.size(index)), int(size)
        self.uses.append(capacity.OneHotUse("scatter", rows, cols, self._key("scatter", index, (rows, cols))))
        return self.ops.scatter_add(values, index, size)


def footprint(kernel: Kernel, workload: Workload, steps: int) -> capacity.Footprint:
    """The capacity model's view of ``workload`` compiled as a program of ``steps`` fused steps."""
    import numpy as np

    states = workload.state0 if isinstance(workload.state0, (tuple, list)) else [workload.state0]
    inputs = kernel.default_inputs(workload)
    streamed = sum(int(np.size(s)) for s in states)
    streamed += sum(int(np.size(v)) for v in inputs.values() if np.asarray(v).dtype.kind == "f")
    constants = sum(4 * int(np.size(v)) for v in workload.params.values() if np.ndim(v) > 0)
    constants += sum(4 * int(np.size(v)) for v in workload.arrays.values() if np.asarray(v).dtype.kind == "f")
    uses: list[capacity.OneHotUse] = []
    if any(np.asarray(v).dtype.kind in "iu" and np.size(v) for v in workload.arrays.values()):
        census = _OneHotCensus()
        params = kernel_params(workload, lambda a: np.asarray(a, np.float32), np.asarray)
        state: Any = tuple(np.asarray(s, np.float32) for s in states)
        state = state if isinstance(workload.state0, (tuple, list)) else state[0]
        with np.errstate(all="ignore"):
            kernel.step(census, state, params, {k: np.asarray(v) for k, v in inputs.items()}, 0)
        uses = census.uses * steps
    return capacity.Footprint(uses, constants, streamed, int(workload.size))


# ------------------------------------------------------------------------------------ device
class GroqDevice(EmulatedDevice):
    """The founding study's GroqChip (GroqCard), through the GroqWare SDK or its emulation."""

    spec = DeviceSpec(
        name="groq",
        vendor="Groq",
        model="GroqChip TSP (GroqCard)",
        kind="lpu",
        memory="230 MB on-chip SRAM (220 MiB usable)",
        memory_bytes=capacity.SRAM_BYTES,
        process_nm=14,
        transistors_bn=26.8,
        clock_mhz="900",
        tdp_w=None,
        peak={
            "fp16": "188 TFLOPS (Argonne evaluation)",
            "int8": "750 TOPS (Argonne evaluation)",
            "on-chip bandwidth": "80 TB/s (Argonne evaluation)",
        },
        software="Groq SDK 0.9.1, tf2onnx 1.13, ONNX opset 16 (study); here: the GroqWare SDK if installed, "
        "else the hwbench GroqWare shim",
        sources=[STUDY_TABLE, ARGONNE],
        published_timing=_published_speed.GROQ,
    )
    modes = MODES
    looked_for = LOOKED_FOR

    def __init__(self, route: str | None = None, shim_backend: str | None = None) -> None:
        chosen = route or os.environ.get(ROUTE_ENV) or "emulate"
        if chosen not in ROUTES:
            raise unknown_name("route of device 'groq'", chosen, ROUTES)
        self.route = chosen
        self.shim_backend = shim_backend

    # --- availability ------------------------------------------------------------------------
    def detect_real(self) -> str | None:
        usable, detail = real_sdk_status()
        return detail if usable else None

    def probe(self) -> ProbeResult:
        usable, detail = real_sdk_status()
        if usable:
            return ProbeResult(status="real", reason=f"real: {detail}")
        return ProbeResult(
            status="emulated",
            reason=f"{detail}; looked for {LOOKED_FOR}. Arithmetic emulated per the GroqChip numerics profile "
            f"(route '{self.route}')",
        )

    # --- numerics ----------------------------------------------------------------------------
    def profile_for(self, mode: str) -> NumericsProfile:
        return build_profile(mode, resolve_knobs(self.name, MODE_KNOBS[mode], {}))

    def settable(self, mode: str | None = None) -> dict[str, Any]:
        profile = self.numerics(mode)
        return {k: v for k, v in profile.parameters.items() if k in MODE_KNOBS.get(profile.mode, {})}

    def apply_overrides(self, profile: NumericsProfile, overrides: dict[str, Any]) -> NumericsProfile:
        knobs = MODE_KNOBS.get(profile.mode, {})
        current = {k: v for k, v in profile.parameters.items() if k in knobs}
        try:
            values = resolve_knobs(self.name, knobs, {**current, **overrides})
        except UsageError as exc:
            if not knobs:
                raise UsageError(
                    f"mode '{profile.mode}' of device 'groq' has no settable parameters "
                    f"({', '.join(sorted(overrides))} given); they belong to mode 'default'"
                ) from None
            raise exc
        return build_profile(profile.mode, values)

    # --- capacity ----------------------------------------------------------------------------
    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        """Float kernels within 220 MiB of SRAM and the one-hot instruction budget (see capacity)."""
        family = kernel.info.family
        if family in NON_FLOAT_FAMILIES:
            return Support.no(
                f"kernel family '{family}' has no GroqChip mapping: the chip runs float32 ONNX graphs exported "
                "from TensorFlow; run it on a device built for it"
            )
        if workload is None:
            return Support.yes("capacity (220 MiB SRAM, one-hot instruction budget) is checked for a built workload")
        steps = int(meta.get("sample_every") or kernel.info.sample_every)
        fp = footprint(kernel, workload, steps)
        problem = capacity.problem(fp)
        if problem:
            return Support.no(problem)
        return Support.yes(
            f"{capacity.mib(fp.sram_bytes)} of {capacity.mib(capacity.SRAM_BYTES)} SRAM; {fp.tiles:,} of "
            f"{capacity.tile_budget():,} one-hot MXM weight tiles per {steps}-step program"
        )

    # --- execution ---------------------------------------------------------------------------
    def executor(self, request: RunRequest) -> Executor:
        request = request.with_mode(request.mode or self.default_mode)
        if request.dtype not in (None, "float32"):
            raise UsageError(
                f"device 'groq' computes in float32 (with reduced-precision units); got dtype '{request.dtype}'"
            )
        profile = request.profile if request.profile is not None else self.numerics(request.mode)
        real = self.detect_real() is not None and request.profile is None
        route = request.engine == GROQWARE_ENGINE or self.route == "groqware"
        if route or (real and request.sample_every is None):
            return self.groqware_executor(request.kernel, request.workload, profile, sample_every=request.sample_every)
        return emulated_executor(request, profile)

    def real_executor(self, request: RunRequest) -> Executor:
        return self.groqware_executor(request.kernel, request.workload, self.numerics(request.mode))

    def groqware_executor(
        self,
        kernel: Kernel,
        workload: Workload,
        profile: NumericsProfile,
        *,
        sample_every: int | None = None,
        allow_real: bool = True,
    ) -> GroqProgramExecutor:
        """Export -> compile -> run, through the GroqWare SDK when usable, else the shim."""
        from hwbench.core.engines.onnx_engine import export_step, unroll_block
        from hwbench.core.engines.tf_engine import kernel_graph
        from hwbench.plugins.groqware_shim.sdk import load_sdk

        sdk = load_sdk(allow_real=allow_real)
        start = time.perf_counter()
        # the ONNX engine's export: one tf2onnx step, chained into a loop-free fused block
        kg = kernel_graph(kernel, workload, dtype="float32", sample_every=sample_every, ops_wrapper=None)
        model = unroll_block(export_step(kg), kg)
        tmp = tempfile.TemporaryDirectory(prefix="hwbench-groq-")
        build_dir = Path(tmp.name)
        import onnx

        onnx.save_model(model, str(build_dir / "block.onnx"))
        iop = sdk.compile(build_dir / "block.onnx", build_dir, name="output", numerics=profile, large_program=True)
        kwargs = {} if sdk.real or self.shim_backend is None else {"backend": self.shim_backend}
        program = sdk.tsp.create_tsp_runner(str(iop), **kwargs)
        executor = GroqProgramExecutor(kg, program, sdk.name, tmp, profile)
        executor.run(workload.state0, kernel.default_inputs(workload), 1)  # first call compiles: setup
        executor.global_step = 0
        executor.setup_s = time.perf_counter() - start
        return executor


class GroqProgramExecutor(Executor):
    """Runs a compiled GroqChip program once per sample block, as the study's runners did.

    ``build_dir`` holds ``block.onnx`` (the export), ``output.iop`` (the program) and
    ``stats.json`` (compile statistics: nodes lowered, one-hot bytes, SRAM use) for as long as
    the executor lives. Counters are not available on this route (``RunOutput.counters`` empty).
    """

    def __init__(self, graph: Any, program: Any, sdk_name: str, tmp: Any, profile: NumericsProfile) -> None:
        self.graph = graph
        self.program = program
        self.engine_name = sdk_name
        self.dtype = "float32"
        self.detail = f"{'emulating ' + profile.name + ', ' if sdk_name != 'groqware' else ''}tf2onnx export"
        self.global_step = 0
        self._tmp = tmp
        self.build_dir = Path(tmp.name)

    @property
    def stats(self) -> dict[str, Any]:
        import json

        path = self.build_dir / "stats.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        import numpy as np

        from hwbench.core.engines import _loop
        from hwbench.core.engines.tf_engine import global_step, host_inputs, host_parts, pack_state

        kg = self.graph
        nsamples = _loop.check_nsamples(nsamples)
        se = kg.sample_every
        cur = host_parts(kg, state)
        # an input the step never reads is not in the exported model: feed only what the program
        # takes (the SDK's runner does not list its inputs: it is given them all)
        names = getattr(self.program, "input_names", None)
        takes = {n.lower() for n in names} if names is not None else None
        feeds = {f"in_{k}".lower(): v for k, v in zip(kg.input_keys, host_inputs(kg, inputs))}
        feeds = {k: v for k, v in feeds.items() if takes is None or k in takes}
        probes = np.zeros((nsamples, kg.ncells), np.float32)
        spikes = np.full((nsamples, kg.ncells), _loop.NO_SPIKE, _loop.SPIKE_DTYPE) if kg.has_spikes else None
        for k in range(nsamples):
            step = {f"state_{j}": s for j, s in enumerate(cur)}
            step["t0"] = np.asarray(k * se, np.int32)
            step["g0"] = np.asarray(global_step(self.global_step, k * se), np.int32)
            out = self.program(**feeds, **{key: v for key, v in step.items() if takes is None or key in takes})
            cur = [np.asarray(out[f"new_state_{j}"], np.float32) for j in range(len(cur))]
            probes[k] = out["probe"]
            if spikes is not None:
                spikes[k] = out["spikes"]
        self.global_step += nsamples * se
        return RunOutput(state=pack_state(kg, cur), probes=probes, spikes=spikes, counters={})


@hookimpl
def hwbench_devices() -> list[Device]:
    return [GroqDevice()]
