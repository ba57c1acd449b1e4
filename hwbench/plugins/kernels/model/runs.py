"""The engines that run a model, each named in the report: the op-level evaluator on a device's
arithmetic (the float64 reference, the emulated devices) and ONNX Runtime (the CPU's fp32 run and
the ensemble floor; CUDA / TensorRT on a real GPU).

ONNX Runtime gives every node's output, as Polygraphy's ``--onnx-outputs mark all`` does, by
listing the node outputs as graph outputs (their element types from ONNX's shape inference). A
marked session keeps those tensors apart, which stops ORT from fusing across them, so the final
outputs a user compares with (the CPU run's) come from an unmarked session.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.onnx.graph import OnnxGraph

Execution = Literal["real", "emulated"]


@dataclass
class ModelRun:
    """One run of a model: its outputs, every node output kept (``tensors``), what ran it, how long."""

    outputs: dict[str, np.ndarray]
    tensors: dict[str, np.ndarray]
    engine: str
    execution: Execution
    setup_s: float
    run_s: float
    arithmetic: dict[str, str] = field(default_factory=dict)
    note: str = ""


class OrtUnavailable(Exception):
    """ONNX Runtime cannot run this graph (an opset form it no longer implements, a missing provider)."""


# --------------------------------------------------------------------------- the evaluator
def evaluator_run(
    graph: OnnxGraph,
    arith: Arith,
    feeds: Mapping[str, np.ndarray],
    *,
    intermediates: bool = True,
    overrides: Mapping[str, Arith] | None = None,
    repeats: int = 0,
    execution: Execution = "emulated",
) -> ModelRun:
    """The graph on ``arith``. Setup: the constants folded; then the first call (on the JAX backend
    it compiles the program too) and ``repeats`` more: ``run_s`` is the fastest call after the
    first, or the first when there are none."""
    from hwbench.evaluator.onnx.evaluate import compile_graph

    t0 = time.perf_counter()
    fn = compile_graph(graph, arith, intermediates=intermediates, overrides=overrides)
    setup = time.perf_counter() - t0
    times = []
    for _ in range(1 + repeats):
        t1 = time.perf_counter()
        result = fn(feeds)
        times.append(time.perf_counter() - t1)
    engine = f"hwbench evaluator ({arith.backend}, {arith.label})"
    best = min(times[1:]) if repeats else times[0]
    return ModelRun(result.outputs, result.tensors, engine, execution, setup, best, arith.describe())


# --------------------------------------------------------------------------- ONNX Runtime
def marked(proto: Any, names: Sequence[str]) -> Any:
    """A copy of the model whose outputs are its own plus ``names`` (those of a known float type)."""
    import onnx
    from onnx import shape_inference

    model = onnx.ModelProto()
    model.CopyFrom(proto)
    try:
        types = {
            vi.name: vi.type.tensor_type.elem_type
            for vi in shape_inference.infer_shapes(proto, strict_mode=False).graph.value_info
        }
    except Exception:  # no inferred types: only the graph's own outputs
        types = {}
    have = {o.name for o in model.graph.output}
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    for name in names:
        if name not in have and types.get(name) in floats:
            model.graph.output.append(onnx.helper.make_tensor_value_info(name, types[name], None))
    return model


def ort_session(proto: Any, providers: Sequence[Any]) -> Any:
    """An ONNX Runtime session of the model, or :class:`OrtUnavailable` saying why not."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise OrtUnavailable("ONNX Runtime is not installed (pip install 'hwbench[onnx]')") from None
    ort.set_default_logger_severity(3)  # its warnings (an opset its optimizers skip) are not the user's errors
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(proto.SerializeToString(), options, providers=list(providers))
    except Exception as exc:  # ORT's own exception types (NOT_IMPLEMENTED, INVALID_GRAPH, ...)
        raise OrtUnavailable(_first_line(exc)) from None


def ort_run(
    proto: Any,
    feeds: Mapping[str, np.ndarray],
    *,
    providers: Sequence[Any] = ("CPUExecutionProvider",),
    mark: Sequence[str] = (),
    repeats: int = 0,
    execution: Execution = "real",
) -> ModelRun:
    """The model on ONNX Runtime; with ``mark``, those node outputs kept as ``tensors``."""
    t0 = time.perf_counter()
    session = ort_session(marked(proto, mark) if mark else proto, providers)
    setup = time.perf_counter() - t0
    names = [o.name for o in session.get_outputs()]
    times = []
    try:
        for _ in range(1 + repeats):
            t1 = time.perf_counter()
            values = session.run(None, dict(feeds))
            times.append(time.perf_counter() - t1)
    except Exception as exc:
        raise OrtUnavailable(_first_line(exc)) from None
    got = dict(zip(names, (np.asarray(v) for v in values)))
    own = [o.name for o in proto.graph.output]
    provider = session.get_providers()[0]
    engine = f"onnxruntime {_ort_version()} ({provider}{', every node output marked' if mark else ''})"
    best = min(times[1:]) if repeats else times[0]
    return ModelRun({k: got[k] for k in own}, {k: v for k, v in got.items() if k in set(mark)}, engine,
                    execution, setup, best)  # fmt: skip


def _ort_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:240]}"
