"""The ONNX Runtime engine: the TensorFlow sample block exported through tf2onnx.

This is the founding study's route to TensorRT and to the GroqChip compiler: the same fused
block the TensorFlow engine compiles with XLA is converted to ONNX (opset 17) and run by ONNX
Runtime with the best execution provider present (TensorRT, then CUDA, then CPU). Parameters and
connectivity are constants inside the model; the state lives in two runtime buffers that swap
roles every call (IOBinding), so only the probe, spikes and counters cross to the host per block.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput
from hwbench.core.engines.tf_engine import (
    SUPPORTED_DTYPES,
    BlockGraph,
    build_block,
    check_dtype,
    host_inputs,
    host_state,
    pack_state,
    sum_counters,
)
from hwbench.core.engines.tf_ops import import_tf
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, Workload

OPSET = 17
"""ONNX opset of the export (>= 16, the GroqChip SDK's in the study; 17 is tf2onnx's default)."""

PROVIDER_PREFERENCE = ("TensorrtExecutionProvider", "CUDAExecutionProvider")
"""Tried in this order before the CPU provider, which is always last (and always present)."""

REQUIRED_MODULES = ("tensorflow", "tf2onnx", "onnx", "onnxruntime")


def choose_providers(available: list[str]) -> list[str]:
    """TensorRT, then CUDA, then CPU, restricted to what this ONNX Runtime build offers."""
    return [p for p in PROVIDER_PREFERENCE if p in available] + ["CPUExecutionProvider"]


def export_block(block: BlockGraph) -> Any:
    """The block as an ONNX ModelProto (tf2onnx, ``from_function``), logging kept quiet."""
    tf = import_tf()
    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    import tf2onnx

    fn = tf.function(block.fn, input_signature=block.signature)
    model, _ = tf2onnx.convert.from_function(fn, input_signature=block.signature, opset=OPSET)
    onnx_ops = {n.op_type for n in model.graph.node if n.domain in ("", "ai.onnx")}
    foreign = sorted({n.op_type for n in model.graph.node} - onnx_ops)
    if foreign:  # tf2onnx leaves ops it cannot convert in place and carries on
        raise UnavailableError(f"tf2onnx could not convert TensorFlow op(s) {', '.join(foreign)} of this kernel")
    return model


class OnnxExecutor(Executor):
    """Runs the exported block once per sample through one IOBinding, state kept in the runtime.

    ``provider`` names the execution provider that ran the model (the first one ONNX Runtime
    accepted; nodes a provider cannot take fall back to the next one, as ONNX Runtime does).
    """

    def __init__(self, block: BlockGraph, model: Any, session: Any, ort: Any) -> None:
        self.block = block
        self.model = model
        self.session = session
        self.provider: str = session.get_providers()[0]
        self.global_step = 0
        self._ort = ort
        self._device = "cuda" if self.provider in PROVIDER_PREFERENCE else "cpu"
        self._input_names = {i.name for i in session.get_inputs()}
        self._output_names = {o.name for o in session.get_outputs()}
        self._binding = session.io_binding()
        # two state buffer sets on the device: read one, write the other, swap
        self._buffers = [
            [ort.OrtValue.ortvalue_from_shape_and_type(shape, block.np_dtype, self._device, 0) for shape in block.state_shapes]
            for _ in range(2)
        ]

    def save_model(self, path: str | Path) -> Path:
        """Write the exported ONNX model (for tools that consume ONNX, e.g. a vendor compiler)."""
        import onnx

        path = Path(path)
        onnx.save_model(self.model, str(path))
        return path

    def _bind_host_output(self, name: str, row: np.ndarray) -> None:
        self._binding.bind_output(name, "cpu", 0, row.dtype.type, list(row.shape), row.ctypes.data)

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        b, binding, ort = self.block, self._binding, self._ort
        nsamples = int(nsamples)
        if nsamples < 0:
            raise UsageError(f"nsamples must be >= 0, got {nsamples}")
        for buf, part in zip(self._buffers[0], host_state(b, state)):
            buf.update_inplace(part)
        host_in = host_inputs(b, inputs)
        keep = [ort.OrtValue.ortvalue_from_numpy(v, self._device, 0) for v in host_in.values()]
        for key, value in zip(host_in, keep):
            binding.bind_ortvalue_input(f"in_{key}", value)
        probes = np.zeros((nsamples, b.ncells), b.np_dtype)
        spikes = np.full((nsamples, b.ncells), -1, np.int16) if b.has_spikes else None
        counts = np.zeros((nsamples, len(b.counter_names)), np.int32)
        cur, nxt = self._buffers
        for k in range(nsamples):
            for i, (src, dst) in enumerate(zip(cur, nxt)):
                binding.bind_ortvalue_input(f"state_{i}", src)
                binding.bind_ortvalue_output(f"new_state_{i}", dst)
            if "t0" in self._input_names:
                binding.bind_cpu_input("t0", np.array(k * b.sample_every, np.int32))
            if "g0" in self._input_names:
                binding.bind_cpu_input("g0", np.array(self.global_step + k * b.sample_every, np.int32))
            self._bind_host_output("probe", probes[k])
            if spikes is not None:
                self._bind_host_output("spikes", spikes[k])
            if b.counter_names:
                self._bind_host_output("counters", counts[k])
            binding.synchronize_inputs()
            self.session.run_with_iobinding(binding)
            binding.synchronize_outputs()
            cur, nxt = nxt, cur
        self._buffers = [cur, nxt]
        self.global_step += nsamples * b.sample_every
        return RunOutput(
            state=pack_state(b, [np.array(buf.numpy(), copy=True) for buf in cur]),
            probes=probes,
            spikes=spikes,
            counters=sum_counters(b.counter_names, list(counts)),
        )


class OnnxEngine(Engine):
    """ONNX Runtime on the tf2onnx export of the fused TensorFlow block."""

    name = "onnx"
    dtypes = SUPPORTED_DTYPES
    summary = "ONNX Runtime (TensorRT > CUDA > CPU) on the tf2onnx export of the fused block"

    def available(self) -> tuple[bool, str]:
        missing = [m for m in REQUIRED_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"{', '.join(missing)} not installed (pip install 'hwbench[onnx]')"
        return True, ""

    def build(
        self,
        kernel: Kernel,
        workload: Workload,
        *,
        dtype: str = "float32",
        sample_every: int | None = None,
        ops_wrapper: OpsWrapper | None = None,
    ) -> Executor:
        check_dtype(self.name, dtype)
        ok, reason = self.available()
        if not ok:
            raise UnavailableError(f"engine '{self.name}' is not available here: {reason}")
        import_tf()  # importing the libraries is not part of setup
        import onnxruntime as ort

        start = time.perf_counter()
        block = build_block(kernel, workload, dtype=dtype, sample_every=sample_every, ops_wrapper=ops_wrapper)
        model = export_block(block)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: provider fallbacks are reported via `provider`
        providers = choose_providers(ort.get_available_providers())
        try:
            session = ort.InferenceSession(model.SerializeToString(), options, providers=providers)
        except Exception as exc:  # ORT raises its own exception types (NotImplemented, Fail, ...)
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "implementation" in first_line.lower():
                raise UsageError(
                    f"engine '{self.name}' cannot run kernel '{kernel.name}' in {dtype}: ONNX Runtime "
                    f"({', '.join(providers)}) lacks an op for it: {first_line}"
                ) from None
            raise UnavailableError(f"ONNX Runtime could not load the exported model: {first_line}") from None
        executor = OnnxExecutor(block, model, session, ort)
        # The first run allocates the runtime's arenas (and builds TensorRT engines): setup too.
        executor.run(workload.state0, kernel.default_inputs(workload), 1)
        executor.global_step = 0
        executor.setup_s = time.perf_counter() - start
        return executor
