"""The ONNX Runtime engine: the kernel's TensorFlow step exported through tf2onnx, 40 per model.

This is the founding study's route to TensorRT and to the GroqChip compiler. One kernel step
(the TensorFlow graph the TensorFlow engine runs) is converted with tf2onnx (opset 17); the sample
block is then built by chaining ``sample_every`` copies of that step inside one ONNX graph, with
the spike bookkeeping and the probe. The result is a loop-free, 40-step fused model, as the study
gave the GroqChip compiler, obtained at the conversion cost of one step: tf2onnx's time grows
with the graph (an unrolled io-ehh block takes minutes on a small machine), and exporting a
rolled TensorFlow loop gives an ONNX ``Loop``, which ONNX Runtime ran markedly slower than the
unrolled graph.

ONNX Runtime runs it with the best execution provider present (TensorRT, then CUDA, then CPU).
Parameters and connectivity are constants in the model; the state lives in two runtime buffers
that swap roles every call (IOBinding), so only the probe, spikes and counters reach the host.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

BACK_TO_BACK = "remove_back_to_back"
"""tf2onnx's optimizer that merges Cast chains (see :func:`_keep_casts`)."""


def choose_providers(available: list[str]) -> list[str]:
    """TensorRT, then CUDA, then CPU, restricted to what this ONNX Runtime build offers."""
    return [p for p in PROVIDER_PREFERENCE if p in available] + ["CPUExecutionProvider"]


# export --------------------------------------------------------------------------------------------
def export_step(kg: KernelGraph) -> Any:
    """One step as an ONNX model: inputs ``data..., t0, g0, i[, first][, counts]``.

    Outputs ``new_state_<j>``, ``probe`` and, where the block tracks them, ``first_out`` and
    ``counts_out``. Input order follows the signature (the converter may rename inputs).
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
    with _keep_casts():
        model, _ = tf2onnx.convert.from_function(fn, input_signature=signature, opset=OPSET)
    foreign = sorted({n.op_type for n in model.graph.node if n.domain not in ("", "ai.onnx")})
    if foreign:  # tf2onnx leaves ops it cannot convert in place and carries on
        raise UnavailableError(f"tf2onnx could not convert TensorFlow op(s) {', '.join(foreign)} of this kernel")
    return model


@contextlib.contextmanager
def _keep_casts() -> Iterator[None]:
    """Convert without tf2onnx's back-to-back optimizer, which merges cast chains.

    It treats float types as lossless and folds float64 -> float32 -> float64 into nothing,
    deleting exactly the roundings an emulating ops namespace (or a kernel) asks for with
    ``astype``. ONNX Runtime itself keeps such chains. tf2onnx's ``from_function`` offers no way to
    choose optimizers, so the entry is taken out of its registry for the conversion and put back;
    a tf2onnx without that registry is refused rather than trusted to keep the roundings.
    """
    import tf2onnx.optimizer

    registry = getattr(tf2onnx.optimizer, "_optimizers", None)
    if not isinstance(registry, dict) or BACK_TO_BACK not in registry:
        raise UnavailableError(
            f"tf2onnx {tf2onnx.__version__}: cannot switch off its cast-chain folding ({BACK_TO_BACK}), "
            "which would delete float roundings; use tf2onnx 1.16-1.17"
        )
    saved = dict(registry)
    registry.pop(BACK_TO_BACK)
    try:
        yield
    finally:
        registry.clear()
        registry.update(saved)


def unroll_block(step_model: Any, kg: KernelGraph) -> Any:
    """Chain ``sample_every`` copies of the step model into one loop-free block model.

    Graph inputs: ``state_<j>``, ``in_<key>``, ``t0``, ``g0``; outputs: ``new_state_<j>``,
    ``probe`` (of the last step), ``spikes`` (int16) and ``counters`` where tracked. The copies
    share the step's initializers (parameters, connectivity); only tensors computed per step are
    renamed, and nodes whose results nobody uses (the probes of earlier steps) are dropped.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    g = step_model.graph
    data_in, (t0_in, g0_in, i_in), carry_in = _step_ports(g, kg)
    nstate = len(kg.state_shapes)
    shared = {x.name for x in g.initializer}
    initializers = list(g.initializer)
    first, counts = _carry_initializers(kg, initializers)
    state = [f"state_{j}" for j in range(nstate)]
    data_names = state + [f"in_{k}" for k in kg.input_keys]
    nodes: list[Any] = []
    probe = ""
    for c in range(kg.sample_every):
        step_const = f"hwb_i_{c}"
        initializers.append(numpy_helper.from_array(np.array(c, np.int32), step_const))
        ren = dict(zip(data_in, state + data_names[nstate:]))
        ren.update({t0_in: "t0", g0_in: "g0", i_in: step_const})
        ren.update(dict(zip(carry_in, [x for x in (first, counts) if x is not None])))
        nodes += _copy_step(g, f"s{c}/", ren, shared)
        state = [ren[f"new_state_{j}"] for j in range(nstate)]
        probe = ren["probe"]
        first = ren["first_out"] if first is not None else None
        counts = ren["counts_out"] if counts is not None else None
    outputs, out_info = _block_outputs(g, kg, state, probe, first, counts)
    nodes = _live(nodes + outputs, {o.name for o in out_info})
    used = {name for n in nodes for name in n.input}
    graph = helper.make_graph(
        nodes,
        "hwbench_block",
        [_renamed_value(x, name) for x, name in zip(g.input[: len(data_in) + 2], [*data_names, "t0", "g0"])],
        out_info,
        [t for t in initializers if t.name in used],
    )
    return helper.make_model(graph, opset_imports=step_model.opset_import, ir_version=step_model.ir_version)


def _step_ports(g: Any, kg: KernelGraph) -> tuple[list[str], list[str], list[str]]:
    """The step graph's inputs as (state and input tensors, [t0, g0, step index], carried spikes/counts).

    Refuses a step that exported with control flow or with inputs other than its signature's."""
    import onnx

    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for n in g.node for a in n.attribute):
        raise UnavailableError("the kernel's step exported with control flow; the ONNX engine needs a loop-free step")
    ndata = len(kg.state_shapes) + len(kg.input_keys)
    names = [x.name for x in g.input]
    if len(names) != ndata + 3 + int(kg.has_spikes) + int(kg.stepped):
        raise UnavailableError(f"tf2onnx exported the step with inputs {names}; expected one per signature entry")
    return names[:ndata], names[ndata : ndata + 3], names[ndata + 3 :]


def _carry_initializers(kg: KernelGraph, initializers: list[Any]) -> tuple[str | None, str | None]:
    """The initial first-spike offsets and event counts the steps carry (None: not tracked)."""
    import numpy as np
    from onnx import numpy_helper

    first = counts = None
    if kg.has_spikes:
        first = "hwb_first_init"
        initializers.append(numpy_helper.from_array(np.full(kg.ncells, _loop.NO_SPIKE, np.int32), first))
    if kg.stepped:
        counts = "hwb_counts_init"
        initializers.append(numpy_helper.from_array(np.zeros(len(kg.counter_names), np.int32), counts))
    return first, counts


def _copy_step(g: Any, prefix: str, ren: dict[str, str], shared: set[str]) -> list[Any]:
    """One copy of the step's nodes: computed tensors get ``prefix``, inputs follow ``ren`` (updated)."""
    import onnx

    nodes = []
    for node in g.node:
        new = onnx.NodeProto()
        new.CopyFrom(node)
        new.name = prefix + node.name
        for k, name in enumerate(new.input):
            if name and name not in shared:
                new.input[k] = ren.get(name, prefix + name)
        for k, name in enumerate(new.output):
            if name:
                ren[name] = new.output[k] = prefix + name
        nodes.append(new)
    return nodes


def _block_outputs(
    g: Any, kg: KernelGraph, state: list[str], probe: str, first: str | None, counts: str | None
) -> tuple[list[Any], list[Any]]:
    """The block's output nodes and their value infos: new state, last probe, spikes, counters."""
    import numpy as np
    from onnx import TensorProto, helper

    nstate = len(state)
    outputs = [helper.make_node("Identity", [s], [f"new_state_{j}"]) for j, s in enumerate(state)]
    outputs.append(helper.make_node("Identity", [probe], ["probe"]))
    step_out = {x.name: x for x in g.output}
    out_info = [_renamed_value(step_out[f"new_state_{j}"], f"new_state_{j}") for j in range(nstate)]
    out_info.append(_renamed_value(step_out["probe"], "probe"))
    if first is not None:
        spike_type = helper.np_dtype_to_tensor_dtype(np.dtype(_loop.SPIKE_DTYPE))
        outputs.append(helper.make_node("Cast", [first], ["spikes"], to=spike_type))
        out_info.append(helper.make_tensor_value_info("spikes", spike_type, [kg.ncells]))
    if counts is not None:
        outputs.append(helper.make_node("Identity", [counts], ["counters"]))
        out_info.append(helper.make_tensor_value_info("counters", TensorProto.INT32, [len(kg.counter_names)]))
    return outputs, out_info


def fast_gathers(model: Any) -> Any:
    """A copy of ``model`` whose 1-D ``Gather`` nodes are ``GatherElements`` (same results).

    ONNX Runtime's CPU ``Gather`` copies one element per index through a generic block-copy
    path, which made the gap-junction gathers dominate a step at thousands of cells;
    ``GatherElements`` on the same 1-D data is a tight loop. Only gathers from rank-1 data are
    rewritten (indices of other ranks are flattened and the result reshaped back), so the
    rewrite is pure data movement. The exported model (``OnnxExecutor.model``) stays as
    tf2onnx made it; only the model ONNX Runtime runs is rewritten.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inferred = onnx.shape_inference.infer_shapes(model).graph
    rank = {t.name: len(t.dims) for t in graph.initializer}
    for vi in [*inferred.input, *inferred.value_info, *inferred.output]:
        if vi.type.tensor_type.HasField("shape"):
            rank[vi.name] = len(vi.type.tensor_type.shape.dim)
    nodes = []
    flat_shape = "hwb_flat_shape"
    need_flat = False
    for node in graph.node:
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        if node.op_type != "Gather" or node.domain not in ("", "ai.onnx") or axis not in (0, -1):
            nodes.append(node)
            continue
        data, index = node.input
        if rank.get(data) != 1 or index not in rank:
            nodes.append(node)
        elif rank[index] == 1:
            nodes.append(helper.make_node("GatherElements", [data, index], list(node.output), name=node.name, axis=0))
        else:
            need_flat = True
            base = f"{node.name}/hwb"
            nodes += [
                helper.make_node("Reshape", [index, flat_shape], [f"{base}_idx"], name=f"{base}_flatten"),
                helper.make_node("GatherElements", [data, f"{base}_idx"], [f"{base}_val"], name=node.name, axis=0),
                helper.make_node("Shape", [index], [f"{base}_shape"], name=f"{base}_shape"),
                helper.make_node("Reshape", [f"{base}_val", f"{base}_shape"], list(node.output), name=f"{base}_back"),
            ]
    if need_flat:
        graph.initializer.append(numpy_helper.from_array(np.array([-1], np.int64), flat_shape))
    del graph.node[:]
    graph.node.extend(nodes)
    return out


def _renamed_value(value_info: Any, name: str) -> Any:
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
        import numpy as np

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
            # named arrays stay alive through the run (ONNX Runtime may use their memory in place)
            t0 = np.array(k * se, np.int32)
            g0 = np.array(global_step(self.global_step, k * se), np.int32)
            if "t0" in self._inputs:
                binding.bind_cpu_input("t0", t0)
            if "g0" in self._inputs:
                binding.bind_cpu_input("g0", g0)
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

    def __init__(self, *, threads: int | None = None, spin: bool = False) -> None:
        """``threads``: ONNX Runtime intra-op threads (None: its default, one per physical core).

        ``spin``: let idle pool threads busy-wait for work. Off by default: a step is hundreds of
        small nodes, and spinning threads compete for the cores with the host loop and with other
        processes, which made runs markedly slower on a shared 2-core machine.
        """
        self.threads = threads
        self.spin = spin

    def available(self) -> tuple[bool, str]:
        missing = [m for m in REQUIRED_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"{', '.join(missing)} not installed (pip install 'hwbench[onnx]')"
        return True, f"{', '.join(REQUIRED_MODULES)} installed"

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
        import_tf()  # importing the libraries is not part of setup
        import onnxruntime as ort

        start = time.perf_counter()
        kg = kernel_graph(kernel, workload, dtype=dtype, sample_every=sample_every, ops_wrapper=ops_wrapper)
        model = unroll_block(export_step(kg), kg)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: provider fallbacks show in `provider`
        if self.threads is not None:
            options.intra_op_num_threads = int(self.threads)
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.spin else "0")
        providers = choose_providers(ort.get_available_providers())
        try:
            session = ort.InferenceSession(fast_gathers(model).SerializeToString(), options, providers=providers)
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
