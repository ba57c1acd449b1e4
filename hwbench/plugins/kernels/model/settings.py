"""What a model audit is asked to do, read from the audit's protocol options.

The CLI and the library put them in ``AuditSettings.options`` (JSON values, so they are kept in the
report's settings; arrays given in memory travel under ``_``-prefixed keys, which reports leave
out): ``model``, ``inputs``, ``shapes``, ``input_range``, ``rtol``, ``atol``, ``labels``,
``precision_map``, ``keep_wider``, ``wider``, ``max_memory``, ``backend``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.files import check_input_file
from hwbench.evaluator.judge import Criteria
from hwbench.plugins.kernels.model.inputs import InputOptions

BACKENDS = ("numpy", "jax")
DEFAULT_BACKEND = "numpy"
"""The evaluator's backend for a model: numpy. A model is evaluated once per run, and on JAX that
once includes XLA compiling the whole graph, which costs more than the evaluation itself (CPU
seconds per candidate: light ResNet-50 on tpu-v3 2.2 on numpy, 4.9 on JAX; on ipu:fp16-sr 3.3 and
9.8). The library's ``backend="jax"`` keyword chooses JAX."""
KEYS: tuple[str, ...] = ("model", "inputs", "shapes", "input_range", "rtol", "atol", "labels", "precision_map")
KEYS += ("keep_wider", "wider", "max_memory", "backend", "_inputs", "_labels")


@dataclass(frozen=True)
class ModelSettings:
    model: str
    inputs: InputOptions
    criteria: Criteria
    precision_map: bool = False
    keep_wider: tuple[str, ...] = ()
    wider: str | None = None
    max_memory: int | None = None
    backend: str = DEFAULT_BACKEND

    @classmethod
    def from_options(cls, options: Mapping[str, Any], seed: int) -> ModelSettings:
        unknown = sorted(set(options) - set(KEYS) - {"config", "dists"})
        if unknown:
            raise UsageError(f"unknown model-audit option {', '.join(unknown)}; known: {', '.join(KEYS[:-2])}")
        model = options.get("model")
        if not model:
            raise UsageError("a model audit needs a model file: hwbench audit --model FILE (or model=... in Python)")
        inputs = options.get("inputs")
        shapes = {str(k): tuple(int(d) for d in v) for k, v in (options.get("shapes") or {}).items()}
        rng = options.get("input_range")
        opts = InputOptions(
            path=str(inputs) if inputs and options.get("_inputs") is None else None,
            arrays=options.get("_inputs"),
            shapes=shapes,
            input_range=(float(rng[0]), float(rng[1])) if rng is not None else None,
            seed=seed,
        )
        backend = str(options.get("backend") or DEFAULT_BACKEND)
        if backend not in BACKENDS:
            raise UsageError(f"unknown evaluator backend '{backend}'; choose from: {', '.join(BACKENDS)}")
        rtol, atol = _tolerance(options, "rtol"), _tolerance(options, "atol")
        criteria = Criteria(rtol, atol, top1=True, labels=_labels(options))  # a network's 2-D output: a classifier's
        if options.get("precision_map") and not criteria.tolerances:
            raise UsageError(
                "--precision-map needs a target the outputs must meet: give --rtol and/or --atol "
                "(as onnxconverter-common's auto_convert_mixed_precision asks for)"
            )
        return cls(
            model=str(model),
            inputs=opts,
            criteria=criteria,
            precision_map=bool(options.get("precision_map")),
            keep_wider=_keep_wider(options.get("keep_wider")),
            wider=options.get("wider") or None,
            max_memory=int(options["max_memory"]) if options.get("max_memory") else None,
            backend=backend,
        )


def _tolerance(options: Mapping[str, Any], key: str) -> float | None:
    value = options.get(key)
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not (math.isfinite(v) and v >= 0):
        raise UsageError(f"--{key} must be a finite number >= 0, got {value!r}")
    return v


def _labels(options: Mapping[str, Any]) -> np.ndarray | None:
    """``--labels labels.npy``: one non-negative integer class per row of the classifier's output."""
    given = options.get("_labels")
    if given is None and options.get("labels"):
        path = check_input_file(options["labels"], "labels file")
        try:
            given = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise UsageError(f"labels file {path} is not a .npy array ({type(exc).__name__})") from None
    if given is None:
        return None
    labels = np.asarray(given)
    if labels.ndim != 1 or labels.dtype.kind not in "iu" or (labels.size and labels.min() < 0):
        raise UsageError(
            f"labels must be a 1-D array of non-negative integer classes, got {labels.dtype} of shape {labels.shape}"
        )
    return labels


def load_keep_wider(path: str | Path) -> tuple[str, ...]:
    """A precision map's JSON (``{"keep_wider": [node names]}``, as ``--precision-map`` writes it)."""
    path = check_input_file(path, "keep-wider file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"keep-wider file {path} is not JSON ({type(exc).__name__})") from None
    names = data.get("keep_wider") if isinstance(data, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise UsageError(f'keep-wider file {path}: expected {{"keep_wider": ["node name", ...]}}')
    return tuple(names)


def _keep_wider(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str | Path):
        return load_keep_wider(value)
    if isinstance(value, list | tuple) and all(isinstance(n, str) for n in value):
        return tuple(value)
    raise UsageError("keep_wider must be a file written by --precision-map or a list of node names")
