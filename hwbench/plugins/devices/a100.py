"""NVIDIA A100 80GB: CUDA fp32 through JAX, and TensorRT (TF32 by default) through ONNX Runtime.

Two modes, as in the founding study:

* ``cuda-fp32`` — every operation in IEEE fp32; matrix products in fp32 too (TF32 off: JAX's
  ``jax_default_matmul_precision="highest"``). Emulated, that is the carrier's own arithmetic.
* ``tensorrt`` — TensorRT's default ``kTF32`` builder flag: the multiplicands of matrix products
  and convolutions are rounded to TF32 (10 fraction bits, fp32 range), multiplied exactly and
  accumulated in fp32; elementwise work stays IEEE fp32. io-ehh has no matrix product, so TF32
  touches it only if its gather / scatter-add become one-hot matrix products (the overridable
  assumption ``gather_as_matmul``, on by default; see ``docs/devices/a100.md``).

Real execution needs an NVIDIA GPU (found through ``/proc/driver/nvidia``, without importing any
framework) and, per mode, JAX with its CUDA plugin or ONNX Runtime with TensorRT. Any NVIDIA
GPU qualifies — the spec and the profiles describe the study's A100, and the probe names the GPU
that would actually run.
"""

from __future__ import annotations

import ctypes.util
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwbench.accuracy.numerics.emulated_device import KnobbedDevice, emulated_executor
from hwbench.accuracy.numerics.formats import RoundingMode
from hwbench.accuracy.numerics.presets import (
    EXP_ULPS_MAX,
    STUDY,
    STUDY_TABLE,
    XLA_CPU_NOTE,
    Knob,
    error_op,
    faithful_exp,
    fma_op,
    knob_notes,
    native_profile,
)
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.device import DeviceSpec, ProbeResult, RunRequest, Support
from hwbench.core.energy import PublishedEnergy
from hwbench.core.engine import Executor
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.ops import OpClass
from hwbench.plugins.devices import _published_speed
from hwbench.plugins.devices._support import capacity_support, footprint, jax_on_device

SNN_TRAINING_ENERGY = (
    "Sun, Eshraghian, Lu et al., arXiv:2211.10725 (2022), Section IV (Tables II-IV): DSNN training on MNIST, batch 128"
)

if TYPE_CHECKING:
    from hwbench.core.device import Device

ARGONNE = "Argonne National Laboratory AI-accelerator evaluation (Emani et al., 2022): A100 peak rates"
TRT_TF32 = (
    "NVIDIA TensorRT Developer Guide, 'Reduced Precision' / TF32: inner products round the FP32 "
    "multiplicands to 10 mantissa bits keeping the FP32 range, multiply exactly and accumulate in FP32; "
    "BuilderFlag::kTF32 is on by default"
)
PTX_CVT = "NVIDIA PTX ISA, cvt.rna.tf32.f32 (sm_80: the fp32 -> TF32 conversion rounds to nearest, ties away)"
CUDA_EXPF = "CUDA C++ Programming Guide, Mathematical Functions: expf maximum error 2 ulp"
JAX_PRECISION = "JAX jax_default_matmul_precision / lax.Precision.HIGHEST: fp32 matrix products, no TF32"
CUDA_MATH = (
    "CUDA C++ Programming Guide, Mathematical Functions, single precision: expf 2 ulp, logf 1 ulp (maximum "
    "error over the full range)"
)
XLA_GPU_DIV = (
    "XLA GPU back end (tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc, as in TF 2.11): "
    "'-nvptx-prec-divf32=1' ('Use div.full'); NVIDIA PTX ISA, div.full.f32: maximum error 2 ulp over the full range"
)
PTX_FMA = (
    "NVIDIA PTX ISA, add/sub/mul (floating point): 'mul/add sequences with no rounding modifiers may be optimized "
    "to use fused-multiply-add instructions on the target device' (ptxas --fmad=true is the default); LLVM's NVPTX "
    "back end, which XLA uses, also contracts fmul+fadd when optimizing (nvptx-fma-level 2: aggressive fusion, "
    "products with several uses included)"
)
XLA_CPU_FMA = (
    "XLA CPU compiler (CompilerTargetOptions: 'Always allow FMA fusion', AllowFPOpFusion = Fast) on an x86 host "
    "with FMA: the JAX reference contracts a single-use a*b+c too (measured: scripts/measure_reference_libm.py)"
)
HBM_BYTES = 80 * 10**9

MODES = ("cuda-fp32", "tensorrt", "tf32", "fp16", "bf16")
#: tensor-core modes: mode -> (matrix-unit input format, the project's format preset)
TENSOR_CORE_MODES: dict[str, tuple[str, str]] = {
    "tf32": ("tf32", "tf32"),
    "fp16": ("fp16", "fp16"),
    "bf16": ("bf16", "bf16"),
}
A100_MODEL = (
    "Khattak & Mikaitis, 'Accurate Models of NVIDIA Tensor Cores', arXiv:2512.07004 (2025), "
    "github.com/north-numerical-computing/MATLAB-tensor-core models/A100TC.m, validated bit for bit "
    "against the published A100 vectors"
)

EXP_ULPS = Knob(
    0.0,
    "extra +-k ulp error on fp32 exp/log results. CUDA's expf (libdevice, what XLA and TensorRT call) is "
    "documented to 2 ulp, but XLA's CPU exp of the reference is not correctly rounded either, and the two "
    "errors are not independent random offsets; 0 keeps the reference's exp, k > 0 tests sensitivity.",
    f"{CUDA_EXPF}; default: assumption",
    Confidence.ASSUMED,
    minimum=0.0,
    maximum=EXP_ULPS_MAX,
)
TF32_ROUNDING = Knob(
    "nearest-away",
    "how fp32 multiplicands are rounded to TF32. TensorRT documents rounding to 10 mantissa bits but not the "
    "tie rule; sm_80's only fp32->TF32 conversion instruction rounds ties away from zero. Ties need the 13 "
    "dropped bits to be exactly 1000000000000b, so the choice rarely matters; toward-zero models a kernel that "
    "feeds raw fp32 bits to the tensor cores.",
    f"{TRT_TF32}; {PTX_CVT}; tie rule: assumption",
    Confidence.ASSUMED,
    kind="choice",
    choices=("nearest-away", "nearest-even", "toward-zero"),
)
GATHER_AS_MATMUL = Knob(
    True,
    "io-ehh's gather / scatter-add (the gap junctions) run as one-hot matrix products, so their operands are "
    "rounded to TF32. Assumed on: the study found TensorRT's deviation on the IO model mV-order, like the "
    "GroqChip's, whose compiler did lower gather/scatter of the same ONNX graph to one-hot matrix products; "
    "with every elementwise op in IEEE fp32 (as on the CUDA path, whose deviation was far smaller) only TF32 "
    "operands can produce that. Off: TensorRT's native gather layer, exact.",
    f"assumption, from {STUDY} (TensorRT vs GroqChip accuracy; GroqChip one-hot lowering)",
    Confidence.ASSUMED,
    kind="bool",
)
CUDA_EXP_ULPS = Knob(
    1.0,
    "whole ulps (at most) by which fp32 exp/log results differ from the reference's, each element its own "
    "offset from the a100's own stream per function. CUDA documents expf to 2 ulp and logf to 1 ulp; the JAX "
    "reference's exp is itself within 1 ulp of correctly rounded (measured, docs/audit.md), so an offset of "
    "1 keeps the modelled expf within its documented 2 ulp. What libdevice computes bit by bit is not modelled.",
    f"{CUDA_MATH}; reference accuracy: measured (scripts/measure_reference_libm.py); value: derived",
    Confidence.ASSUMED,
    minimum=0.0,
    maximum=EXP_ULPS_MAX,
)
DIV_ULPS = Knob(
    1.0,
    "whole ulps (at most) by which fp32 division results differ from the reference's correctly rounded one. "
    "XLA compiles f32 division on NVIDIA GPUs to PTX div.full.f32 (documented maximum error 2 ulp), so an "
    "offset of 1 on top of the reference's 0.5 ulp keeps it within 2 ulp; 0 models IEEE div.rn.",
    f"{XLA_GPU_DIV}; value: derived",
    Confidence.DOCUMENTED,
    minimum=0.0,
    maximum=EXP_ULPS_MAX,
)
FMA_CONTRACTION = Knob(
    True,
    "a*b+c (and a*b-c, c-a*b) fused into one fused multiply-add, rounded once, wherever a product feeds an "
    "addition, products with several uses included. The JAX reference on an x86 CPU with FMA contracts "
    "single-use products too (XLA:CPU), so the two differ where the product has several uses or the compilers "
    "pick different operands; which products NVCC/ptxas fuse exactly is not published.",
    f"{PTX_FMA}; {XLA_CPU_FMA}",
    Confidence.DOCUMENTED,
    kind="bool",
)
CUDA_FP32_KNOBS: dict[str, Knob] = {"exp_ulps": CUDA_EXP_ULPS, "div_ulps": DIV_ULPS, "fma_contraction": FMA_CONTRACTION}
KNOBS: dict[str, dict[str, Knob]] = {
    "cuda-fp32": CUDA_FP32_KNOBS,
    "tensorrt": {
        "tf32_rounding": TF32_ROUNDING,
        "gather_as_matmul": GATHER_AS_MATMUL,
        "exp_ulps": EXP_ULPS,
        "fma_contraction": FMA_CONTRACTION,
    },
    # the tensor-core modes' elementwise arithmetic is CUDA fp32's, as in cuda-fp32
    **{mode: CUDA_FP32_KNOBS for mode in TENSOR_CORE_MODES},
}


# ------------------------------------------------------------------------------------ probe
def nvidia_gpus(root: Path = Path("/proc/driver/nvidia/gpus")) -> list[str]:
    """Model names of the NVIDIA GPUs the kernel driver reports (no framework import)."""
    names: list[str] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return names
    for entry in entries:
        try:
            lines = (entry / "information").read_text().splitlines()
        except OSError:
            continue
        model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Model:")), "NVIDIA GPU")
        names.append(model)
    return names


def jax_gpu_backend() -> str | None:
    """How JAX would reach a GPU here, or None. Imports nothing heavy unless JAX already is."""
    if "jax" in sys.modules:
        try:
            devices = sys.modules["jax"].devices("gpu")
        except RuntimeError:
            return None
        return f"JAX ({len(devices)} GPU device(s))" if devices else None
    for module in ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13"):
        try:
            if importlib.util.find_spec(module) is not None:
                return f"JAX CUDA plugin ({module})"
        except (ImportError, ValueError):
            continue
    return None


def tensorrt_backend() -> str | None:
    """ONNX Runtime with a TensorRT execution provider and TensorRT libraries, or None."""
    if "onnxruntime" in sys.modules:
        providers = set(sys.modules["onnxruntime"].get_available_providers())
    else:
        try:
            importlib.metadata.version("onnxruntime-gpu")
        except importlib.metadata.PackageNotFoundError:
            return None
        providers = {"TensorrtExecutionProvider"}  # onnxruntime-gpu builds include the TensorRT EP
    if "TensorrtExecutionProvider" not in providers:
        return None
    have_libs = any(importlib.util.find_spec(m) is not None for m in ("tensorrt", "tensorrt_libs"))
    if not have_libs and ctypes.util.find_library("nvinfer") is None:
        return None
    return "ONNX Runtime TensorRT execution provider"


# ---------------------------------------------------------------------------------- profile
def cuda_fp32_ops(values: dict[str, Any]) -> dict[OpClass, OpNumerics]:
    """Where CUDA fp32 through XLA departs from the CPU reference, as the knobs in ``values`` set it:
    libdevice exp / log (``exp_ulps``), div.full division (``div_ulps``; a division by a constant is
    XLA's product with the constant's reciprocal instead), contracted a*b+c (``fma_contraction``).
    Every NVIDIA device mode computing elementwise fp32 on CUDA cores uses it."""
    ops: dict[OpClass, OpNumerics] = {}
    if values["exp_ulps"] > 0:
        ops[OpClass.EXP] = faithful_exp(values["exp_ulps"], source=CUDA_EXPF, confidence=Confidence.ASSUMED)
    if values.get("div_ulps", 0) > 0:
        ops[OpClass.DIV] = error_op(
            values["div_ulps"], source=XLA_GPU_DIV, confidence=Confidence.DOCUMENTED, constant_reciprocal=True
        )
    if values["fma_contraction"]:
        ops[OpClass.FMA] = fma_op(source=PTX_FMA, confidence=Confidence.DOCUMENTED)
    return ops


def build_profile(mode: str, values: dict[str, Any]) -> NumericsProfile:
    """The cited profile of ``mode`` for the (already resolved) parameter ``values``."""
    ops = cuda_fp32_ops(values)
    notes = knob_notes(KNOBS[mode], values)
    if mode == "cuda-fp32":
        return _cuda_fp32_profile(values, ops, notes)
    if mode in TENSOR_CORE_MODES:
        return _tensor_core_profile(mode, values, ops, notes)
    return _tensorrt_profile(values, ops, notes)


def _tensor_core_profile(
    mode: str, values: dict[str, Any], ops: dict[OpClass, OpNumerics], notes: list[str]
) -> NumericsProfile:
    """Matrix products on the A100's tensor cores (A100 block-FMA model), CUDA fp32 elementwise."""
    from hwbench.plugins.devices._matrix_unit_ops import unit_notes, unit_parameters

    unit_fmt, preset = TENSOR_CORE_MODES[mode]
    ops[OpClass.MATMUL_INPUT] = OpNumerics(
        format=preset,
        source=f"{A100_MODEL}; operands cast to {unit_fmt} with nearest-even (the framework's cast)",
        confidence=Confidence.DOCUMENTED,
    )
    ops[OpClass.MATMUL_ACCUMULATE] = OpNumerics(format="fp32", source=A100_MODEL, confidence=Confidence.DOCUMENTED)
    notes = [
        "Elementwise +, -, * are IEEE fp32 on the CUDA cores; confidence: documented (CUDA C++ Programming "
        "Guide, Floating-Point Standard). As in cuda-fp32, division is div.full.f32 (parameter div_ulps), exp / "
        "log are libdevice's (exp_ulps) and a*b+c is contracted (fma_contraction).",
        f"Matrix products and convolutions on the tensor cores: block-FMA model a100 {unit_fmt}->fp32 where a DL "
        "primitive's audit runs them; elsewhere the operand-rounding approximation. Source: " + A100_MODEL + ".",
        XLA_CPU_NOTE,
        *notes,
        *unit_notes("a100", unit_fmt),
    ]
    return NumericsProfile(
        name=f"a100-{mode}",
        device="a100",
        mode=mode,
        description=f"A100 tensor cores, {unit_fmt} operands, fp32 block-FMA accumulation; CUDA fp32 elementwise",
        ops=ops,
        parameters={**values, **unit_parameters("a100", unit_fmt)},
        notes=notes,
    )


def _cuda_fp32_profile(values: dict[str, Any], ops: dict[OpClass, OpNumerics], notes: list[str]) -> NumericsProfile:
    """CUDA fp32: IEEE +, -, *, contracted a*b+c, libdevice exp, div.full division, fp32 matrix products."""
    mode = "cuda-fp32"
    description = (
        "CUDA fp32 on the A100 through XLA: FMA contraction, approximate exp and division within CUDA's "
        "documented bounds, fp32 matrix products (TF32 disabled)"
    )
    notes = [
        "Elementwise +, -, * are IEEE fp32 with round to nearest even on the CUDA cores; confidence: "
        "documented (CUDA C++ Programming Guide, Floating-Point Standard). Division is div.full.f32 (parameter "
        "div_ulps), a*b+c is contracted (parameter fma_contraction).",
        "Subnormals are kept: XLA's GPU back end flushes them only with --xla_gpu_ftz (default false); "
        "confidence: documented (XLA debug option xla_gpu_ftz).",
        f"Matrix products in fp32, TF32 off ({JAX_PRECISION}; NVIDIA_TF32_OVERRIDE=0 does the same for "
        "NVIDIA libraries); confidence: documented.",
        XLA_CPU_NOTE,
        *notes,
    ]
    if not ops:
        return native_profile(
            name="a100-cuda-fp32", device="a100", mode=mode, description=description, notes=notes, parameters=values
        )
    return NumericsProfile(
        name="a100-cuda-fp32",
        device="a100",
        mode=mode,
        description=description,
        ops=ops,
        parameters=values,
        notes=notes,
    )


def _tensorrt_profile(values: dict[str, Any], ops: dict[OpClass, OpNumerics], notes: list[str]) -> NumericsProfile:
    """TensorRT with kTF32: TF32 multiplicands, fp32 accumulation, optionally gathers as one-hot products."""
    from hwbench.plugins.devices._matrix_unit_ops import unit_notes, unit_parameters

    mode = "tensorrt"
    rounding = RoundingMode(values["tf32_rounding"])
    ops[OpClass.MATMUL_INPUT] = OpNumerics(
        format="tf32",
        rounding=rounding,
        source=f"{TRT_TF32}; tie rule per parameter tf32_rounding ({PTX_CVT})",
        confidence=Confidence.DOCUMENTED,
    )
    ops[OpClass.MATMUL_ACCUMULATE] = OpNumerics(format="fp32", source=TRT_TF32, confidence=Confidence.DOCUMENTED)
    if values["gather_as_matmul"]:
        ops[OpClass.GATHER] = OpNumerics(
            format="fp32",
            lowering="one-hot-matmul",
            confidence=Confidence.ASSUMED,
            source="assumption (parameter gather_as_matmul): gather / scatter-add run as one-hot TF32 matrix "
            f"products, inferred from {STUDY}",
        )
    notes = [
        "Elementwise operations stay IEEE fp32 (TensorRT's kTF32 flag affects inner products only); "
        f"confidence: documented ({TRT_TF32}).",
        "io-ehh has no matrix product: TF32 reaches it only through its gap-junction gather / scatter-add, "
        "and only if they are lowered to one-hot matrix products (parameter gather_as_matmul). hwbench's own "
        "ONNX export (tf2onnx >= 1.17) emits Gather and ReduceSum for them, no MatMul.",
        "Not modelled: TensorRT's choice of kernels and fusions (it may pick a non-TF32 kernel where that is "
        "faster, and its fused pointwise exp is not published) and summation order inside matrix products.",
        "Inner products of DL primitives' audits run on the A100 tf32 block-FMA model (see "
        "docs/devices/a100.md, 'Matrix unit'); io-ehh keeps the operand-rounding approximation.",
        XLA_CPU_NOTE,
        *notes,
        *unit_notes("a100", "tf32"),
    ]
    return NumericsProfile(
        name="a100-tensorrt",
        device="a100",
        mode=mode,
        description="TensorRT on the A100 with its default kTF32 flag: TF32 multiplicands, fp32 accumulation, "
        "IEEE fp32 elementwise",
        ops=ops,
        parameters={**values, **unit_parameters("a100", "tf32")},
        notes=notes,
    )


# ----------------------------------------------------------------------------------- device
class A100Device(KnobbedDevice):
    """The founding study's NVIDIA A100 80GB, in its CUDA (fp32) and TensorRT (TF32) modes."""

    mode_knobs = KNOBS
    build_profile = staticmethod(build_profile)

    spec = DeviceSpec(
        name="a100",
        vendor="NVIDIA",
        model="A100 80GB",
        kind="gpu",
        memory="80 GB HBM2e",
        memory_bytes=HBM_BYTES,
        process_nm=7,
        transistors_bn=54.2,
        clock_mhz="1275-1410",
        tdp_w=400,
        peak={
            "fp32": "19.5 TFLOPS",
            "fp16/bf16 (tensor cores)": "312 TFLOPS",
            "memory bandwidth": "1.6 TB/s",
        },
        software="TF 2.11.0 (study); here: JAX (CUDA) for cuda-fp32, ONNX Runtime TensorRT EP for tensorrt",
        sources=[STUDY_TABLE, ARGONNE],
        published_timing=_published_speed.A100,
        published_energy=[
            PublishedEnergy(
                workload="snnTorch DSNN training step, MNIST, batch 128 (9,859 img/s): power",
                figure=60.5,
                unit="W",
                source=SNN_TRAINING_ENERGY,
            ),
            PublishedEnergy(
                workload="snnTorch DSNN training step, MNIST, batch 128 (9,859 img/s): throughput per watt",
                figure=162.9,
                unit="img/s/W",
                source=SNN_TRAINING_ENERGY,
            ),
        ],
    )
    modes = MODES
    looked_for = "an NVIDIA GPU (/proc/driver/nvidia) with JAX CUDA or ONNX Runtime TensorRT"

    def real_backend(self, mode: str) -> str | None:
        """What would run ``mode`` for real here (GPU plus that mode's library), or None."""
        gpus = nvidia_gpus()
        if not gpus:
            return None
        if mode in ("fp16", "bf16"):  # the kernels' operands are fp32: no real reduced-precision path
            return None
        backend = tensorrt_backend() if mode == "tensorrt" else jax_gpu_backend()
        return f"{gpus[0]} via {backend}" if backend else None

    def detect_real(self) -> str | None:
        found = {mode: self.real_backend(mode) for mode in self.modes}
        real = [f"{mode}: {how}" for mode, how in found.items() if how]
        if not real:
            return None
        emulated = [mode for mode, how in found.items() if not how]
        tail = f"; emulated: {', '.join(emulated)}" if emulated else ""
        return "real " + "; ".join(real) + tail

    def probe(self) -> ProbeResult:
        real = self.detect_real()
        if real:
            return ProbeResult(status="real", reason=real)
        gpus = nvidia_gpus()
        if not gpus:
            why = "no NVIDIA GPU found (/proc/driver/nvidia/gpus)"
        else:
            why = f"{gpus[0]} found, but neither JAX's CUDA plugin nor ONNX Runtime's TensorRT provider is installed"
        return ProbeResult(status="emulated", reason=f"{why}; arithmetic emulated per its numerics profiles")

    def real_executor(self, request: RunRequest) -> Executor:
        """The GPU run of ``mode`` — or, if only the other mode's library is here, its emulation."""
        kernel, workload, mode, engine, dtype = (
            request.kernel,
            request.workload,
            str(request.mode),
            request.engine,
            request.dtype,
        )
        if dtype not in (None, "float32"):
            raise UsageError(f"device 'a100' runs float32 (the study's precision); got dtype '{dtype}'")
        backend = self.real_backend(mode)
        if backend is None:
            executor = emulated_executor(request, self.numerics(mode))
            executor.detail += f" (no real backend for mode '{mode}' here)"
            return executor
        if mode in ("cuda-fp32", "tf32"):
            tf32 = mode == "tf32"
            return jax_on_device(
                kernel,
                workload,
                platform="gpu",
                precision="default" if tf32 else "highest",
                engine=engine,
                what=f"{backend}, TF32 {'on' if tf32 else 'off'}",
            )
        return _tensorrt_executor(kernel, workload, engine, backend)

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        """Capacity: state, parameters, connectivity and step temporaries in 80 GB of HBM2e."""
        fp = footprint(kernel, workload, size=meta.get("size"), connected=meta.get("connected", True))
        if fp is None:
            return Support.yes("no size given; the A100 holds 80 GB of HBM2e")
        need = fp.bytes(value=4)
        return capacity_support(need, HBM_BYTES, "80 GB HBM2e", fp.cells)


def _tensorrt_executor(kernel: Kernel, workload: Workload, engine: str | None, backend: str) -> Executor:
    """The ONNX engine, which tries TensorRT first; refused if ONNX Runtime fell back to another EP."""
    from hwbench.core.engines.select import pick_engine
    from hwbench.core.plugins import get_registry

    if engine not in (None, "onnx"):
        raise UsageError(f"mode 'tensorrt' runs through the 'onnx' engine (ONNX Runtime); got engine '{engine}'")
    executor = pick_engine(get_registry().engines, "onnx", "float32").build(kernel, workload, dtype="float32")
    provider = getattr(executor, "provider", "unknown")
    if provider != "TensorrtExecutionProvider":
        raise UnavailableError(
            f"ONNX Runtime ran this model on {provider}, not TensorRT (is libnvinfer on the library path?); "
            "use mode cuda-fp32, or the emulated tensorrt mode (hwbench audit --set or --profile)"
        )
    executor.detail = f"real: {backend} (TensorRT's default kTF32 flag)"
    return executor


@hookimpl
def hwbench_devices() -> list[Device]:
    return [A100Device()]
