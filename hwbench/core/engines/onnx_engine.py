"""The ONNX Runtime engine: the kernel's TensorFlow step exported through tf2onnx, 40 per model.

This is the founding study's route to TensorRT and to the GroqChip compiler. One kernel step
(the TensorFlow graph the TensorFlow engine runs) is converted with tf2onnx (opset 17); the sample
block is then built by chaining ``sample_every`` copies of that step inside one ONNX graph, with
the spike bookkeeping and the probe. The result is a loop-free, 40-step fused model, as the study
gave the GroqChip compiler, obtained at the conversion cost of one step (converting an unrolled
TensorFlow block with tf2onnx takes minutes for io-ehh, and an ONNX ``Loop`` ran ~2.5x slower
in ONNX Runtime than the unrolled graph).

ONNX Runtime runs it with the best execution provider present (TensorRT, then CUDA, then CPU).
Parameters and connectivity are constants in the model; the state lives in two runtime buffers
that swap roles every call (IOBinding), so only the probe, spikes and counters reach the host.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.engine import Engine, Executor, OpsWrapper, RunOutput
from hwbench.core.engines import _loop
from hwbench.core.engines.tf_engine import (
    SUPPORTED_DTYPES,
    KernelGraph,
    global_step,
    host_inputs,
    host_parts,
    kernel_graph,
    pack_state,
    sum_blocks,
)
from hwbench.core.engines.tf_ops import import_tf
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.kernel import Kernel, Workload

OPSET = 17
"""ONNX opset of the export (the study's GroqChip toolchain used 16; 17 is tf2onnx's default)."""

PROVIDER_PREFERENCE = ("TensorrtExecutionProvider", "CUDAExecutionProvider")
"""Tried in this order before the CPU provider, which is always last (and always present)."""

REQUIRED_MODULES = ("tensorflow", "tf2onnx", "onnx", "onnxruntime")


def choose_providers(available: list[str]) -> list[str]:
    """TensorRT, then CUDA, then CPU, restricted to what this ONNX Runtime build offers."""
    return [p for p in PROVIDER_PREFERENCE if p in available] + ["CPUExecutionProvider"]


# export --------------------------------------------------------------------------------------------
def export_step(kg: KernelGraph) -> Any:
    """One step as an ONNX model: inputs ``data..., t0, g0, i[, first][, counts]``.

    Outputs ``new_state_<j>``, ``probe`` and, where the block tracks them, ``first`` and
    ``counts``. Input order follows the signature (the converter may rename inputs).
    """
    tf = import_tf()
    logging.getLogger("tf2onnx").setLevel(logging.ERROR)
    import tf2onnx

    signature = [*kg.data_specs()] + [tf.TensorSpec([], tf.int32, name=n) for n in ("t0", "g0", "i")]
    if kg.has_spikes:
        signature.append(tf.TensorSpec([kg.ncells], tf.int32, name="first"))
    if kg.stepped:
        signature.append(tf.TensorSpec([len(kg.counter_names)], tf.int32, name="counts"))

    def step(*flat: Any) -> dict[str, Any]:
        parts, inputs, rest = kg.split(flat)
        t0, g0, i = rest[:3]
        first = rest[3] if kg.has_spikes else None
        counts = rest[-1] if kg.stepped else None
        parts, first, counts = kg.step(parts, inputs, kg.params(), t0, g0, i, first, counts)
        out = {f"new_state_{j}": p for j, p in enumerate(parts)}
        out["probe"] = kg.probe(parts)
        if first is not None:
            out["first_out"] = tf.identity(first)
        if counts is not None:
            out["counts_out"] = tf.identity(counts)
        return out

    fn = tf.function(step, input_signature=signature, autograph=False)
    model, _ = tf2onnx.convert.from_function(fn, input_signature=signature, opset=OPSET)
    foreign = sorted({n.op_type for n in model.graph.node if n.domain not in ("", "ai.onnx")})
    if foreign:  # tf2onnx leaves ops it cannot convert in place and carries on
        raise UnavailableError(f"tf2onnx could not convert TensorFlow op(s) {', '.join(foreign)} of this kernel")
    return model


def unroll_block(step_model: Any, kg: KernelGraph) -> Any:
    """Chain ``sample_every`` copies of the step model into one loop-free block model.

    Graph inputs: ``state_<j>``, ``in_<key>``, ``t0``, ``g0``; outputs: ``new_state_<j>``,
    ``probe`` (of the last step), ``spikes`` (``_loop.SPIKE_DTYPE``) and ``counters`` where tracked. The copies
    share the step's initializers (parameters, connectivity); only tensors computed per step are
    renamed, and nodes whose results nobody uses (the probes of earlier steps) are dropped.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    g = step_model.graph
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in g.node for a in n.attribute):
        raise UnavailableError("the kernel's step exported with control flow; the ONNX engine needs a loop-free step")
    ndata = len(kg.state_shapes) + len(kg.input_keys)
    step_inputs = [x.name for x in g.input]
    if len(step_inputs) != ndata + 3 + int(kg.has_spikes) + int(kg.stepped):
        raise UnavailableError(f"tf2onnx exported the step with inputs {step_inputs}; expected one per signature entry")
    data_in, (t0_in, g0_in, i_in), carry_in = (
        step_inputs[:ndata],
        step_inputs[ndata : ndata + 3],
        step_inputs[ndata + 3 :],
    )
    nstate = len(kg.state_shapes)
    shared = {x.name for x in g.initializer}
    initializers = list(g.initializer)
    nodes: list[Any] = []

    first = counts = None
    if kg.has_spikes:
        first = "hwb_first_init"
        initializers.append(numpy_helper.from_array(np.full(kg.ncells, _loop.NO_SPIKE, np.int32), first))
    if kg.stepped:
        counts = "hwb_counts_init"
        initializers.append(numpy_helper.from_array(np.zeros(len(kg.counter_names), np.int32), counts))
    state = [f"state_{j}" for j in range(nstate)]
    data_names = state + [f"in_{k}" for k in kg.input_keys]
    probe = ""
    for c in range(kg.sample_every):
        step_const = f"hwb_i_{c}"
        initializers.append(numpy_helper.from_array(np.array(c, np.int32), step_const))
        ren = dict(zip(data_in, state + data_names[nstate:]))
        ren.update({t0_in: "t0", g0_in: "g0", i_in: step_const})
        carry = [x for x in (first, counts) if x is not None]
        ren.update(dict(zip(carry_in, carry)))
        for node in g.node:
            new = onnx.NodeProto()
            new.CopyFrom(node)
            new.name = f"s{c}/{node.name}"
            for k, name in enumerate(new.input):
                if name and name not in shared:
                    new.input[k] = ren.get(name, f"s{c}/{name}")
            for k, name in enumerate(new.output):
                if name:
                    ren[name] = new.output[k] = f"s{c}/{name}"
            nodes.append(new)
        state = [ren[f"new_state_{j}"] for j in range(nstate)]
        probe = ren["probe"]
        first = ren["first_out"] if first is not None else None
        counts = ren["counts_out"] if counts is not None else None

    outputs = [helper.make_node("Identity", [s], [f"new_state_{j}"]) for j, s in enumerate(state)]
    outputs.append(helper.make_node("Identity", [probe], ["probe"]))
    out_info = [
        helper.make_tensor_value_info(f"new_state_{j}", _onnx_float(kg), list(s)) for j, s in enumerate(kg.state_shapes)
    ]
    out_info.append(helper.make_tensor_value_info("probe", _onnx_float(kg), None))
    if first is not None:
        spike_type = helper.np_dtype_to_tensor_dtype(np.dtype(_loop.SPIKE_DTYPE))
        outputs.append(helper.make_node("Cast", [first], ["spikes"], to=spike_type))
        out_info.append(helper.make_tensor_value_info("spikes", spike_type, [kg.ncells]))
    if counts is not None:
        outputs.append(helper.make_node("Identity", [counts], ["counters"]))
        out_info.append(helper.make_tensor_value_info("counters", TensorProto.INT32, [len(kg.counter_names)]))
    nodes = _live(nodes + outputs, {o.name for o in out_info})
    used = {name for n in nodes for name in n.input}
    graph = helper.make_graph(
        nodes,
        "hwbench_block",
        [_renamed_input(x, name) for x, name in zip(g.input[: ndata + 2], [*data_names, "t0", "g0"])],
        out_info,
        [t for t in initializers if t.name in used],
    )
    return helper.make_model(graph, opset_imports=step_model.opset_import, ir_version=step_model.ir_version)


def _onnx_float(kg: KernelGraph) -> int:
    from onnx import TensorProto

    return TensorProto.DOUBLE if kg.np_dtype == np.float64 else TensorProto.FLOAT


def _renamed_input(value_info: Any, name: str) -> Any:
    import onnx

    out = onnx.ValueInfoProto()
    out.CopyFrom(value_info)
    out.name = name
    return out


def _live(nodes: list[Any], wanted: set[str]) -> list[Any]:
    """The nodes that contribute to ``wanted`` outputs, in their original (topological) order."""
    needed = set(wanted)
    keep = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    return keep[::-1]


# execution -----------------------------------------------------------------------------------------
class OnnxExecutor(Executor):
    """Runs the block model once per sample through one IOBinding, state kept in the runtime.

    ``provider`` names the execution provider ONNX Runtime put first for this session (nodes a
    provider cannot take fall back to the next one, as ONNX Runtime does); ``model`` is the
    exported ONNX model (``save_model`` writes it, e.g. for a vendor compiler).
    """

    def __init__(self, kg: KernelGraph, model: Any, session: Any) -> None:
        import onnxruntime as ort

        self.graph = kg
        self.model = model
        self.session = session
        self.provider: str = session.get_providers()[0]
        self.global_step = 0
        self._ort = ort
        self._device = "cuda" if self.provider in PROVIDER_PREFERENCE else "cpu"
        self._inputs = {x.name for x in session.get_inputs()}
        self._binding = session.io_binding()
        self._buffers = [  # two state buffer sets on the device: read one, write the other, swap
            [
                ort.OrtValue.ortvalue_from_shape_and_type(list(s), kg.np_dtype.type, self._device, 0)
                for s in kg.state_shapes
            ]
            for _ in range(2)
        ]

    def save_model(self, path: str | Path) -> Path:
        """Write the exported ONNX model to ``path``."""
        import onnx

        path = Path(path)
        onnx.save_model(self.model, str(path))
        return path

    def _bind_host_output(self, name: str, row: np.ndarray) -> None:
        self._binding.bind_output(name, "cpu", 0, row.dtype.type, list(row.shape), row.ctypes.data)

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> RunOutput:
        kg, binding, ort = self.graph, self._binding, self._ort
        nsamples = _loop.check_nsamples(nsamples)
        se = kg.sample_every
        for buf, part in zip(self._buffers[0], host_parts(kg, state)):
            buf.update_inplace(part)
        host_in = host_inputs(kg, inputs)  # kept alive: CPU OrtValues share these buffers
        bound = {k: ort.OrtValue.ortvalue_from_numpy(v, self._device, 0) for k, v in zip(kg.input_keys, host_in)}
        for key, value in bound.items():
            if f"in_{key}" in self._inputs:  # an input the step never reads is not in the model
                binding.bind_ortvalue_input(f"in_{key}", value)
        probes = np.zeros((nsamples, kg.ncells), kg.np_dtype)
        spikes = np.full((nsamples, kg.ncells), _loop.NO_SPIKE, _loop.SPIKE_DTYPE) if kg.has_spikes else None
        counts = np.zeros((nsamples, len(kg.counter_names)), np.int32)
        cur, nxt = self._buffers
        for k in range(nsamples):
            for j, (src, dst) in enumerate(zip(cur, nxt)):
                binding.bind_ortvalue_input(f"state_{j}", src)
                binding.bind_ortvalue_output(f"new_state_{j}", dst)
            if "t0" in self._inputs:
                binding.bind_cpu_input("t0", np.array(k * se, np.int32))
            if "g0" in self._inputs:
                binding.bind_cpu_input("g0", np.array(global_step(self.global_step, k * se), np.int32))
            self._bind_host_output("probe", probes[k])
            if spikes is not None:
                self._bind_host_output("spikes", spikes[k])
            if kg.stepped:
                self._bind_host_output("counters", counts[k])
            binding.synchronize_inputs()
            self.session.run_with_iobinding(binding)
            binding.synchronize_outputs()
            cur, nxt = nxt, cur
        self._buffers = [cur, nxt]
        self.global_step += nsamples * se
        return RunOutput(
            state=pack_state(kg, [np.array(buf.numpy(), copy=True) for buf in cur]),
            probes=probes,
            spikes=spikes,
            counters=_loop.counters_dict(kg.counter_names, sum_blocks(kg, list(counts))),
        )


class OnnxEngine(Engine):
    """ONNX Runtime on the tf2onnx export of the kernel step, unrolled into a sample block."""

    name = "onnx"
    dtypes = SUPPORTED_DTYPES
    summary = "ONNX Runtime (TensorRT > CUDA > CPU) on the tf2onnx export, one sample block per call"

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
        _loop.check_dtype(self.name, dtype, self.dtypes)
        ok, reason = self.available()
        if not ok:
            raise UnavailableError(f"engine '{self.name}' is not available here: {reason}")
        import_tf()  # importing the libraries is not part of setup
        import onnxruntime as ort

        start = time.perf_counter()
        kg = kernel_graph(kernel, workload, dtype=dtype, sample_every=sample_every, ops_wrapper=ops_wrapper)
        model = unroll_block(export_step(kg), kg)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: provider fallbacks show in `provider`
        providers = choose_providers(ort.get_available_providers())
        try:
            session = ort.InferenceSession(model.SerializeToString(), options, providers=providers)
        except Exception as exc:  # ORT raises its own types (NotImplemented, Fail, InvalidGraph, ...)
            text = str(exc).strip()
            first_line = text.splitlines()[0] if text else type(exc).__name__
            if "implementation" in first_line.lower():
                raise UsageError(
                    f"engine '{self.name}' cannot run kernel '{kernel.name}' in {dtype}: ONNX Runtime "
                    f"({', '.join(providers)}) has no kernel for an op of it: {first_line}"
                ) from None
            raise UnavailableError(f"ONNX Runtime could not load the exported model: {first_line}") from None
        executor = OnnxExecutor(kg, model, session)
        # The first run allocates the runtime's arenas (and builds TensorRT engines): setup too.
        executor.run(workload.state0, kernel.default_inputs(workload), 1)
        executor.global_step = 0
        executor.setup_s = time.perf_counter() - start
        return executor
