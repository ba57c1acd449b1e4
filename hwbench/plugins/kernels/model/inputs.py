"""A model's inputs: read from a user's ``.npz`` (checked against the graph) or generated from the
graph's declared shapes and dtypes.

``--inputs file.npz``: one array per graph input, keyed by the input's name; a missing or extra
name, a dtype other than the declared one, or a shape that contradicts a declared dimension is one
UsageError naming the input. Without a file, each input is drawn uniformly from ``--input-range``
(floats; integers: the whole numbers in it; booleans: either), seeded by ``--seed``, in the shape
the graph declares. A symbolic dimension (``batch``) takes its value from ``--shape name:d0,d1,..``
or from the arrays of ``--inputs``; left open, it is refused, naming it.
"""

from __future__ import annotations

import math
import re
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.files import check_input_file

if TYPE_CHECKING:
    from hwbench.evaluator.onnx.graph import InputSpec, OnnxGraph

DEFAULT_RANGE = (-1.0, 1.0)
"""Generated inputs are uniform on [-1, 1] unless ``--input-range`` says otherwise."""
MAX_RANK = 16


@dataclass(frozen=True)
class InputOptions:
    """Where a model's inputs come from: a file, arrays in memory (the library), or generated."""

    path: str | None = None
    arrays: Mapping[str, np.ndarray] | None = None
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    input_range: tuple[float, float] | None = None
    seed: int = 0

    def describe(self) -> str:
        if self.path:
            return f"from {self.path}"
        if self.arrays is not None:
            return "given in memory"
        lo, hi = self.input_range or DEFAULT_RANGE
        return f"uniform on [{lo:g}, {hi:g}], seed {self.seed}"


# --------------------------------------------------------------------------- option values
def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``name:d0,d1,...`` -> (name, dims); every dim a positive integer."""
    name, sep, dims = str(text).rpartition(":")
    if not sep or not name:
        raise UsageError(f"--shape '{text}': expected NAME:D0,D1,... (a graph input and its dimensions)")
    parts = dims.split(",")
    if not all(re.fullmatch(r"[0-9]{1,12}", p.strip()) and int(p) > 0 for p in parts) or len(parts) > MAX_RANK:
        raise UsageError(f"--shape '{text}': dimensions must be positive integers, at most {MAX_RANK} of them")
    return name, tuple(int(p) for p in parts)


def parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, dims = parse_shape(item)
        if name in out:
            raise UsageError(f"--shape {name} is given twice")
        out[name] = dims
    return out


def parse_range(text: str) -> tuple[float, float]:
    """``LO,HI``: two finite numbers, LO < HI."""
    parts = str(text).split(",")
    try:
        lo, hi = (float(p) for p in parts) if len(parts) == 2 else (math.nan, math.nan)
    except ValueError:
        lo = hi = math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UsageError(f"--input-range '{text}': expected LO,HI, two finite numbers with LO < HI")
    return lo, hi


# --------------------------------------------------------------------------- shapes
def resolve_shapes(graph: OnnxGraph, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Each graph input's concrete shape: its declared one, with ``shapes`` for inputs that name
    them; a symbolic dimension left open is refused, naming it."""
    unknown = sorted(set(shapes) - set(graph.inputs))
    if unknown:
        raise UsageError(f"--shape names '{unknown[0]}', which is no graph input; inputs: {_names(graph)}")
    out = {}
    for name, spec in graph.inputs.items():
        if name in shapes:
            out[name] = _check_dims(spec, shapes[name], "--shape")
        elif spec.symbolic:
            dims = ",".join("D" if isinstance(d, str) else str(d) for d in spec.shape) or "D"
            raise UsageError(
                f"graph input '{name}' has symbolic dimension '{spec.symbolic[0]}': give its size with "
                f"--shape {name}:{dims} (or the arrays with --inputs)"
            )
        else:
            out[name] = tuple(int(d) for d in spec.shape)
    _check_bindings(graph, out)
    return out


def _check_dims(spec: InputSpec, dims: tuple[int, ...], where: str) -> tuple[int, ...]:
    """``dims`` must have the declared rank and agree with every fixed dimension."""
    if len(dims) != len(spec.shape):
        raise UsageError(
            f"{where}: input '{spec.name}' has {len(spec.shape)} dimension(s) {_declared(spec)}, got {len(dims)} {dims}"
        )
    for i, (want, got) in enumerate(zip(spec.shape, dims)):
        if isinstance(want, int) and want != got:
            raise UsageError(
                f"{where}: input '{spec.name}' dimension {i} is {want} in the graph {_declared(spec)}, got {got}"
            )
    return tuple(int(d) for d in dims)


def _check_bindings(graph: OnnxGraph, shapes: Mapping[str, tuple[int, ...]]) -> None:
    """A symbolic dimension named in several inputs has one size."""
    seen: dict[str, tuple[int, str]] = {}
    for name, spec in graph.inputs.items():
        for want, got in zip(spec.shape, shapes[name]):
            if not isinstance(want, str):
                continue
            if want in seen and seen[want][0] != got:
                size, other = seen[want]
                raise UsageError(
                    f"symbolic dimension '{want}' is {size} in input '{other}' but {got} in input '{name}'"
                )
            seen[want] = (got, name)


def _declared(spec: InputSpec) -> str:
    return "(" + ", ".join(str(d) for d in spec.shape) + ")"


def _names(graph: OnnxGraph) -> str:
    return ", ".join(graph.inputs) or "(none)"


# --------------------------------------------------------------------------- files and arrays
def read_npz(path: str | Path, what: str = "inputs file") -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` (no pickles; anything damaged is one UsageError naming the file).
    The arrays' sizes are read from their headers first: more than the host's memory is refused
    (exit 4) before anything is allocated."""
    from hwbench.core.kernel import _npz_shapes

    path = check_input_file(path, what)
    try:
        _npz_shapes(path)
        with np.load(path, allow_pickle=False) as data:
            return {key: np.asarray(data[key]) for key in data.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise UsageError(f"{what} {path} is not a readable .npz of arrays ({type(exc).__name__})") from None


def check_feeds(graph: OnnxGraph, arrays: Mapping[str, Any], origin: str) -> dict[str, np.ndarray]:
    """The arrays as the graph's inputs: every name present and no other, dtypes as declared,
    shapes as declared (symbolic dimensions bound consistently)."""
    feeds = {str(k): np.asarray(v) for k, v in arrays.items()}
    missing = [n for n in graph.inputs if n not in feeds]
    if missing:
        raise UsageError(f"{origin} has no array '{missing[0]}'; the graph's inputs are: {_names(graph)}")
    extra = sorted(set(feeds) - set(graph.inputs))
    if extra:
        raise UsageError(f"{origin} has array '{extra[0]}', which is no graph input; the inputs are: {_names(graph)}")
    for name, spec in graph.inputs.items():
        value = feeds[name]
        if value.dtype != spec.dtype:
            raise UsageError(
                f"{origin}: input '{name}' is {value.dtype}; the graph declares {spec.dtype} (convert it first)"
            )
        _check_dims(spec, tuple(value.shape), origin)
    _check_bindings(graph, {n: tuple(v.shape) for n, v in feeds.items()})
    return {n: feeds[n] for n in graph.inputs}


def generate(
    graph: OnnxGraph, shapes: Mapping[str, tuple[int, ...]], lo: float, hi: float, seed: int
) -> dict[str, np.ndarray]:
    """Seeded inputs of the declared dtypes: floats uniform on [lo, hi] (drawn in float64, then
    rounded to the input's type), integers uniform on the whole numbers in it, booleans fair coins."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, spec in graph.inputs.items():
        shape = shapes[name]
        kind = spec.dtype.kind
        if kind == "b":
            out[name] = rng.integers(0, 2, size=shape).astype(bool)
        elif kind in "iu":
            low, high = math.ceil(lo), math.floor(hi)
            info = np.iinfo(spec.dtype)
            low, high = max(low, int(info.min)), min(high, int(info.max))
            if low > high:
                raise UsageError(f"--input-range {lo:g},{hi:g} holds no {spec.dtype} value for input '{name}'")
            out[name] = rng.integers(low, high, size=shape, endpoint=True).astype(spec.dtype)
        elif kind == "f":
            out[name] = rng.uniform(lo, hi, size=shape).astype(spec.dtype)
        else:
            raise UsageError(f"input '{name}' is {spec.dtype}: only numeric and boolean inputs can be generated")
    return out


def make_feeds(graph: OnnxGraph, opts: InputOptions) -> dict[str, np.ndarray]:
    """The inputs ``opts`` asks for, checked against the graph."""
    if opts.path is not None or opts.arrays is not None:
        if opts.shapes or opts.input_range is not None:
            raise UsageError("--shape and --input-range shape generated inputs; the given inputs fix their own")
        arrays = read_npz(opts.path) if opts.path is not None else opts.arrays
        assert arrays is not None
        return check_feeds(graph, arrays, f"inputs file {opts.path}" if opts.path else "the inputs")
    shapes = resolve_shapes(graph, opts.shapes)
    lo, hi = opts.input_range or DEFAULT_RANGE
    return generate(graph, shapes, lo, hi, opts.seed)


def feeds_digest(feeds: Mapping[str, np.ndarray]) -> str:
    """A short content hash of the inputs (names, dtypes, shapes, bytes): baselines are cached by it."""
    import hashlib

    h = hashlib.sha256()
    for name in sorted(feeds):
        v = np.ascontiguousarray(feeds[name])
        h.update(f"{name}|{v.dtype.str}|{v.shape}|".encode())
        h.update(v.tobytes())
    return h.hexdigest()[:16]
