"""NVIDIA H100 (Hopper): tensor-core matrix products in tf32, fp16, bf16 and fp8, on the H100 model.

Every mode keeps IEEE fp32 for elementwise work (CUDA cores) and computes matrix products and
convolutions on the tensor cores: operands cast to the mode's input format (nearest even), and
every output element the H100 block FMA of ``hwbench.api.matrix_unit("h100", fmt, "fp32")``
(Khattak & Mikaitis, arXiv:2512.07004: 16 fp16/bf16 terms per block with 2 extra alignment bits,
8 tf32 terms, 32 fp8 terms keeping 13 fraction bits; block sums rounded toward zero). The
parameters and their sources are listed in ``docs/devices/h100.md``.

Real execution: with an NVIDIA GPU (found through ``/proc/driver/nvidia``) and JAX's CUDA
plugin, mode ``tf32`` runs the kernel through JAX with XLA's default matmul precision (TF32 on
the tensor cores); the reduced-precision modes need the kernel's operands in fp16 / bf16 / fp8,
which the kernels do not do, so they stay emulated (and say so). ``hwbench probe --device h100``
measures the tensor cores themselves through :class:`JaxTensorCoreUnit` on such a machine.
Neither real path has run on silicon in this project's test suite (no GPU there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np

from hwbench.accuracy.numerics.emulated_device import KnobbedDevice, emulated_executor
from hwbench.accuracy.numerics.presets import XLA_CPU_NOTE, knob_notes
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.core.device import DeviceSpec, ProbeResult, RunRequest, Support
from hwbench.core.engine import Executor
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.hookspecs import hookimpl
from hwbench.core.kernel import Kernel, Workload
from hwbench.core.ops import OpClass
from hwbench.plugins.devices._matrix_unit_ops import unit_notes, unit_parameters
from hwbench.plugins.devices._support import capacity_support, footprint, jax_on_device
from hwbench.plugins.devices.a100 import CUDA_FP32_KNOBS, cuda_fp32_ops, jax_gpu_backend, nvidia_gpus

if TYPE_CHECKING:
    from hwbench.core.device import Device

H100_MODEL = (
    "Khattak & Mikaitis, 'Accurate Models of NVIDIA Tensor Cores', arXiv:2512.07004 (2025), "
    "github.com/north-numerical-computing/MATLAB-tensor-core models/H100TC.m, validated bit for bit "
    "against the published H100 vectors"
)
H100_SPEC = "NVIDIA H100 Tensor Core GPU datasheet (SXM5 80GB)"
HBM_BYTES = 80 * 10**9

#: mode -> (matrix-unit input format, the project's format preset for the operands)
MODES: dict[str, tuple[str, str]] = {
    "tf32": ("tf32", "tf32"),
    "fp16": ("fp16", "fp16"),
    "bf16": ("bf16", "bf16"),
    "fp8-e4m3": ("fp8-e4m3", "fp8-e4m3fn"),
    "fp8-e5m2": ("fp8-e5m2", "fp8-e5m2"),
}
FP8_SCALING = (
    "Transformer Engine's per-tensor current scaling (docs 'FP8 Current Scaling'; "
    "transformer_engine/common/recipe/recipe_common.cuh compute_scale_from_amax: scale = fp8_max / amax rounded to "
    "fp32, 1 when amax is 0 or not finite, FLT_MAX when the quotient overflows; scale_inv = 1 / scale), the cast "
    "x * scale to fp8 rounding to nearest even and saturating (CUDA Math API __nv_fp8_e4m3 / __nv_fp8_e5m2: "
    "__NV_SATFINITE), and cuBLASLt's FP8 GEMM applying the A and B scale factors to the fp32 accumulator "
    "(cublasLtMatmulDescAttributes_t CUBLASLT_MATMUL_DESC_A_SCALE_POINTER / B_SCALE_POINTER); TensorRT's explicit "
    "FP8 quantization divides by amax / fp8_max, the same factor up to its rounding"
)
"""Where the fp8 modes' per-tensor amax scaling comes from (``matrix_scaling``)."""

#: every mode's elementwise arithmetic is CUDA fp32 through XLA, as on the a100 (same knobs, same sources)
KNOBS: dict[str, dict[str, Any]] = {mode: CUDA_FP32_KNOBS for mode in MODES}


def build_profile(mode: str, values: dict[str, Any]) -> NumericsProfile:
    """The H100 profile of ``mode``: operands in the mode's format, products on the H100 model."""
    unit_fmt, preset = MODES[mode]
    ops = {
        **cuda_fp32_ops(values),
        OpClass.MATMUL_INPUT: OpNumerics(
            format=preset,
            source=f"{H100_MODEL}; operands cast to {unit_fmt} with nearest-even (the framework's cast)",
            confidence=Confidence.DOCUMENTED,
        ),
        OpClass.MATMUL_ACCUMULATE: OpNumerics(format="fp32", source=H100_MODEL, confidence=Confidence.DOCUMENTED),
    }
    notes = [
        "Elementwise +, -, * are IEEE fp32 on the CUDA cores; confidence: documented (CUDA C++ Programming "
        "Guide, Floating-Point Standard). As on the a100 (docs/devices/a100.md), division is div.full.f32 "
        "(parameter div_ulps), exp / log are libdevice's within CUDA's documented bounds (exp_ulps) and a*b+c is "
        "contracted (fma_contraction).",
        *knob_notes(KNOBS[mode], values),
        f"Matrix products and convolutions: block-FMA model h100 {unit_fmt}->fp32 where a DL primitive's audit "
        "runs them (every element chained blocks as the hardware's GEMM does); elsewhere the operand-rounding "
        "approximation (operands rounded, one fp32 product). Source: " + H100_MODEL + ".",
        "Not modelled: cuBLAS / cuDNN kernel choice (split-K, the K order of convolutions: im2col order assumed).",
        XLA_CPU_NOTE,
        *unit_notes("h100", unit_fmt),
    ]
    parameters = {**values, **unit_parameters("h100", unit_fmt)}
    if unit_fmt.startswith("fp8"):
        parameters["matrix_scaling"] = "per-tensor-amax"
        notes.append(
            "Parameter matrix_scaling = 'per-tensor-amax', documented: where the op-level evaluator runs a model, "
            "each operand of a matrix product is scaled by fp8_max / amax(operand) before its cast to fp8 and the "
            "product unscaled after. Source: " + FP8_SCALING
        )
    return NumericsProfile(
        name=f"h100-{mode}",
        device="h100",
        mode=mode,
        description=f"H100 tensor cores, {unit_fmt} operands, fp32 block-FMA accumulation; CUDA fp32 elementwise",
        ops=ops,
        parameters=parameters,
        notes=notes,
    )


class H100Device(KnobbedDevice):
    """NVIDIA H100 SXM5 80GB: tensor-core modes on the published H100 block-FMA model."""

    mode_knobs = KNOBS
    build_profile = staticmethod(build_profile)

    spec = DeviceSpec(
        name="h100",
        vendor="NVIDIA",
        model="H100 SXM5 80GB",
        kind="gpu",
        memory="80 GB HBM3",
        memory_bytes=HBM_BYTES,
        process_nm=4,
        transistors_bn=80.0,
        clock_mhz="1590-1980",
        tdp_w=700,
        peak={
            "fp32": "67 TFLOPS",
            "tf32 (tensor cores, dense)": "495 TFLOPS",
            "fp16/bf16 (tensor cores, dense)": "989 TFLOPS",
            "fp8 (tensor cores, dense)": "1979 TFLOPS",
            "memory bandwidth": "3.35 TB/s",
        },
        software="JAX (CUDA) for tf32 on a real GPU; emulated: the H100 block-FMA model",
        sources=[H100_SPEC, H100_MODEL],
    )
    modes = tuple(MODES)
    looked_for = "an NVIDIA GPU (/proc/driver/nvidia) with JAX's CUDA plugin"

    def real_backend(self, mode: str) -> str | None:
        """What would run ``mode`` for real here, or None (only tf32 has a real kernel path)."""
        gpus = nvidia_gpus()
        if not gpus or mode != "tf32":
            return None
        backend = jax_gpu_backend()
        return f"{gpus[0]} via {backend}" if backend else None

    def detect_real(self) -> str | None:
        how = self.real_backend("tf32")
        return f"real tf32: {how}; emulated: fp16, bf16, fp8-e4m3, fp8-e5m2" if how else None

    def probe(self) -> ProbeResult:
        real = self.detect_real()
        if real:
            return ProbeResult(status="real", reason=real)
        gpus = nvidia_gpus()
        why = "no NVIDIA GPU found (/proc/driver/nvidia/gpus)" if not gpus else f"{gpus[0]} found, no JAX CUDA plugin"
        return ProbeResult(status="emulated", reason=f"{why}; tensor cores emulated by the H100 block-FMA model")

    def real_executor(self, request: RunRequest) -> Executor:
        mode = str(request.mode)
        if request.dtype not in (None, "float32"):
            raise UsageError(
                f"device 'h100' runs float32 kernels (tensor-core operands per mode); got '{request.dtype}'"
            )
        backend = self.real_backend(mode)
        if backend is None:
            executor = emulated_executor(request, self.numerics(mode))
            executor.detail += f" (no real backend for mode '{mode}' here)"
            return executor
        return jax_on_device(
            request.kernel,
            request.workload,
            platform="gpu",
            precision="default",
            engine=request.engine,
            what=f"{backend}, TF32 tensor cores",
            shards=request.shards,
        )

    def real_matrix_unit(self, mode: str) -> JaxTensorCoreUnit | None:
        """The GPU's tensor cores as a probe target for ``mode``, or None where there is no GPU."""
        if self.real_backend("tf32") is None:
            return None
        return JaxTensorCoreUnit(MODES[mode][0])

    def supports(self, kernel: Kernel, workload: Workload | None = None, **meta: Any) -> Support:
        fp = footprint(kernel, workload, size=meta.get("size"), connected=meta.get("connected", True))
        if fp is None:
            return Support.yes("no size given; the H100 holds 80 GB of HBM3")
        return capacity_support(fp.bytes(value=4), HBM_BYTES, "80 GB HBM3", fp.cells)


class JaxTensorCoreUnit:
    """The real tensor cores as a probe target: ``inner(a, b, c)`` through JAX on an NVIDIA GPU.

    The rows are one GEMM ``A @ B.T + C`` (operands in the input format, fp32 accumulation via
    ``preferred_element_type``; XLA fuses the ``+ C`` into cuBLAS's beta = 1 accumulator) whose
    diagonal holds the n inner products. Not run in this project's tests (no GPU there).
    """

    DTYPES: ClassVar[dict[str, str]] = {
        "fp16": "float16",
        "bf16": "bfloat16",
        "fp8-e4m3": "float8_e4m3fn",
        "fp8-e5m2": "float8_e5m2",
    }

    def __init__(self, input_format: str) -> None:
        if not nvidia_gpus() or jax_gpu_backend() is None:
            raise UnavailableError("the real tensor cores need an NVIDIA GPU and JAX's CUDA plugin")
        if input_format not in (*self.DTYPES, "tf32"):
            raise UsageError(f"no real tensor-core path for input format '{input_format}'")
        self.input_format = input_format

    def describe(self) -> str:
        return f"{nvidia_gpus()[0]} via JAX, {self.input_format} operands, fp32 accumulation"

    def inner(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return gemm_diagonal(a, b, c, self.input_format, platform="gpu")


def gemm_diagonal(a: np.ndarray, b: np.ndarray, c: np.ndarray, input_format: str, *, platform: str) -> np.ndarray:
    """``a[i] . b[i] + c[i]`` as the diagonal of one jitted ``A @ B.T + diag(c)`` on ``platform``
    (operands in ``input_format``'s dtype, fp32 accumulation). The tests run it on the CPU."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    device = jax.devices(platform)[0]
    tf32 = input_format == "tf32"
    dtype = jnp.float32 if tf32 else getattr(jnp, JaxTensorCoreUnit.DTYPES[input_format])
    precision = jax.lax.Precision.DEFAULT if tf32 else None

    @jax.jit
    def run(x: Any, y: Any, z: Any) -> Any:
        return jnp.matmul(x, y.T, precision=precision, preferred_element_type=jnp.float32) + z

    x = jax.device_put(jnp.asarray(a, dtype=dtype), device)
    y = jax.device_put(jnp.asarray(b, dtype=dtype), device)
    z = jax.device_put(jnp.diag(jnp.asarray(c, dtype=jnp.float32)), device)
    return np.diag(np.asarray(run(x, y, z), dtype=np.float64)).copy()


@hookimpl
def hwbench_devices() -> list[Device]:
    return [H100Device()]
