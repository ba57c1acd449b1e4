"""How much host memory evaluating a model will take, estimated from its shapes before it runs.

ONNX's shape inference gives every tensor's shape once the inputs' shapes are known; an audit keeps
every node's output of the float64 reference and of the runs it compares (the CPU run, the floor and
every candidate, which run at once), and an emulated matrix unit computes a convolution from its
patch matrix (im2col). The estimate (bytes) = 12 per weight (the fp64 and fp32 copies), per
intermediate element 8 (fp64) + 4 for each fp32 run, twice over for the engines' temporaries, and 8
per element of the largest patch matrix. A tensor whose shape inference cannot give is not counted
(the estimate says how many were left out).

The limit is ``--max-memory`` (bytes, or with a unit: ``512M``, ``8G``, ``1.5GiB``), by default
half of the memory available on this host (``MemAvailable``); over it the run is refused (exit 4)
before anything is allocated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.host import GIB, available_memory_bytes

DEFAULT_FRACTION = 0.5
"""Share of the available memory a model may take when no ``--max-memory`` is given."""
_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3, "mb": 10**6, "gb": 10**9}


@dataclass(frozen=True)
class Footprint:
    """Elements of a model's weights, of its intermediate tensors and of its largest patch matrix."""

    weights: int
    intermediates: int
    patches: int
    unknown: int  # tensors whose shape inference could not give

    def audit_bytes(self, candidates: int = 1) -> int:
        per_value = 2 * (8 + 4 * (2 + candidates))
        return 12 * self.weights + per_value * self.intermediates + 8 * self.patches

    def run_bytes(self) -> int:
        return 8 * self.weights + 8 * self.intermediates + 8 * self.patches


def parse_memory(text: str) -> int:
    """``--max-memory``: a positive number of bytes, optionally with a unit (k, M, G, T; KiB, MiB, GiB, TiB)."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    value = float(m.group(1)) * _UNITS[unit] if m and unit in _UNITS else math.nan
    if not (math.isfinite(value) and value >= 1):
        raise UsageError(f"--max-memory '{text}': expected a positive size such as 512M, 8G or 2GiB (bytes if no unit)")
    return int(value)


def footprint(proto: Any, shapes: Mapping[str, tuple[int, ...]]) -> Footprint:
    """The model's tensors counted from ONNX shape inference with the inputs' concrete shapes."""
    import onnx
    from onnx import shape_inference

    model = onnx.ModelProto()
    model.CopyFrom(proto)
    for vi in model.graph.input:
        if vi.name in shapes:
            dims = vi.type.tensor_type.shape.dim
            del dims[:]
            for d in shapes[vi.name]:
                dims.add().dim_value = int(d)
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # inference gave up on this graph: count what is declared
        inferred = model
    sizes = {vi.name: _elements(vi) for vi in [*inferred.graph.value_info, *inferred.graph.output]}
    weights = sum(math.prod(t.dims) for t in proto.graph.initializer)
    made = [o for n in proto.graph.node for o in n.output if o]
    known = [n for n in (sizes.get(o) for o in made) if n is not None]
    patches = max((_patch(n, sizes, inferred) for n in proto.graph.node if n.op_type == "Conv"), default=0)
    return Footprint(int(weights), int(sum(known)), int(patches), len(made) - len(known))


def _elements(vi: Any) -> int | None:
    t = vi.type.tensor_type
    if not t.HasField("shape") or not all(d.HasField("dim_value") for d in t.shape.dim):
        return None
    return math.prod(int(d.dim_value) for d in t.shape.dim)


def _patch(node: Any, sizes: Mapping[str, int | None], model: Any) -> int:
    """Elements of a Conv's patch matrix: output elements x (input channels / groups x kernel)."""
    weight = next((t for t in model.graph.initializer if t.name == node.input[1]), None)
    out = sizes.get(node.output[0])
    if weight is None or out is None or not weight.dims:
        return 0
    per_output = math.prod(weight.dims[1:])  # C/groups x kernel
    return int(out * per_output)


def check_memory(need: int, limit: int | None, what: str, detail: str) -> int:
    """Refuse (exit 4) ``need`` bytes over ``limit`` (default: half the available memory)."""
    have = available_memory_bytes()
    allowed = limit if limit is not None else int(DEFAULT_FRACTION * have)
    if need > allowed:
        source = "--max-memory" if limit is not None else f"the default limit ({DEFAULT_FRACTION:.0%} of available)"
        raise UnavailableError(
            f"{what} needs about {need / GIB:.2f} GiB ({detail}); {source} allows {allowed / GIB:.2f} GiB"
        )
    return need
