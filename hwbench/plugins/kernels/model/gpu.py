"""The real run of a model on an NVIDIA GPU, beside the emulated one: ONNX Runtime's TensorRT or CUDA
execution provider, chosen per device mode.

Which provider computes a mode's arithmetic (ONNX Runtime's provider options, onnxruntime.ai/docs
"TensorRT Execution Provider" and "CUDA Execution Provider"):

* ``tensorrt`` (a100): TensorRT at its default precision, which on Ampere and later lets TF32
  tensor cores compute fp32 layers (TensorRT's ``kTF32`` builder flag is on by default);
* ``tf32`` (a100, h100): the CUDA provider with ``use_tf32=1`` (cuBLAS / cuDNN TF32 math);
* ``cuda-fp32`` (a100): the CUDA provider with ``use_tf32=0`` (IEEE fp32);
* ``fp16`` / ``bf16``: TensorRT with ``trt_fp16_enable`` / ``trt_bf16_enable``;
* ``fp8-e4m3`` / ``fp8-e5m2``: none. TensorRT computes in fp8 only where a model carries
  quantize / dequantize nodes (explicit quantization); a float model has none to run.

A real run needs the chip the device names (an A100 for ``a100``; an H100 or H200, the same Hopper
tensor cores, for ``h100``) and the provider in ONNX Runtime's list; otherwise the report says
which was missing. :func:`gpu_plan` decides from the GPU names and the provider list alone, so its
choice is tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hwbench.plugins.kernels.model.runs import ModelRun, OrtUnavailable, ort_run

TRT = "TensorrtExecutionProvider"
CUDA = "CUDAExecutionProvider"
CHIPS = {"a100": ("A100",), "h100": ("H100", "H200")}
"""The GPU model names (as the driver reports them) whose tensor cores each device models."""
PROVIDERS: dict[str, tuple[str, dict[str, Any]] | str] = {
    "tensorrt": (TRT, {}),
    "tf32": (CUDA, {"use_tf32": 1}),
    "cuda-fp32": (CUDA, {"use_tf32": 0}),
    "fp16": (TRT, {"trt_fp16_enable": True}),
    "bf16": (TRT, {"trt_bf16_enable": True}),
    "fp8-e4m3": "TensorRT computes fp8 only from a model's quantize/dequantize nodes; a float model has none",
    "fp8-e5m2": "TensorRT computes fp8 only from a model's quantize/dequantize nodes; a float model has none",
}


@dataclass(frozen=True)
class GpuPlan:
    """A real run to make (``provider`` with ``options`` on ``chip``), or why none can be made."""

    provider: str | None
    options: dict[str, Any] = field(default_factory=dict)
    chip: str = ""
    reason: str = ""

    @property
    def possible(self) -> bool:
        return self.provider is not None


def gpu_plan(device: str, mode: str, gpus: Sequence[str], providers: Sequence[str]) -> GpuPlan | None:
    """The real run of ``device:mode`` here, or why it is not possible; None for a device that has
    no real ONNX Runtime route at all (anything but the NVIDIA GPUs)."""
    names = CHIPS.get(device)
    if names is None:
        return None
    route = PROVIDERS.get(mode)
    if route is None:
        return GpuPlan(None, reason=f"no ONNX Runtime provider computes {device} mode '{mode}'")
    if isinstance(route, str):
        return GpuPlan(None, reason=route)
    chip = next((g for g in gpus if any(n in g for n in names)), None)
    if chip is None:
        found = f"found: {', '.join(gpus)}" if gpus else "no NVIDIA GPU found (/proc/driver/nvidia/gpus)"
        return GpuPlan(None, reason=f"the real run needs an {' or '.join(names)} GPU; {found}")
    provider, options = route
    if provider not in providers:
        listed = ", ".join(providers)
        return GpuPlan(None, chip=chip, reason=f"ONNX Runtime here has no {provider} (providers: {listed})")
    return GpuPlan(provider, dict(options), chip)


def plan_here(device: str, mode: str) -> GpuPlan | None:
    """:func:`gpu_plan` with this host's GPUs and ONNX Runtime's available providers."""
    from hwbench.plugins.devices.a100 import nvidia_gpus

    if device not in CHIPS:
        return None
    try:
        import onnxruntime as ort

        providers = list(ort.get_available_providers())
    except ImportError:
        return GpuPlan(None, reason="ONNX Runtime is not installed (pip install onnxruntime-gpu)")
    return gpu_plan(device, mode, nvidia_gpus(), providers)


def gpu_run(proto: Any, feeds: Mapping[str, np.ndarray], plan: GpuPlan, *, repeats: int = 0) -> ModelRun:
    """The model on the GPU through the planned provider (``OrtUnavailable`` when it fails there)."""
    if plan.provider is None:
        raise OrtUnavailable(plan.reason)
    run = ort_run(proto, feeds, providers=[(plan.provider, plan.options)], repeats=repeats, execution="real")
    if not run.engine.split("(")[1].startswith(plan.provider):  # ORT fell back to another provider
        raise OrtUnavailable(f"ONNX Runtime did not run the model on {plan.provider} ({run.engine})")
    run.note = f"real run on {plan.chip}"
    return run
