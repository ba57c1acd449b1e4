"""The named matrix units reproduce real GPUs bit for bit: every case of every published set.

Data: tests/data/tensor_core/vectors.npz (see its README): inputs sent to real V100, A2, A100,
Ada, L40S, H100, H200 and B200 tensor cores and the outputs the chips returned, 48 (GPU, input,
output) sets, 5,000 inner products each. Reading conventions of the publishers' validation script
(``Validate_TC_models.m``) and CUDA harness: for fp16 outputs c is the fp32 value rounded to fp16
(nearest even); the H100 / H200 fp8 runs with fp32 outputs used c = 0. Outputs are compared as
fp32 bit patterns.

The vectorised numpy backend runs every case; the exact-integer reference runs a deterministic
sample of each set (every 25th case) and JAX the same sample of the A100, H100 and B200 sets, so the
test stays fast. ``HWBENCH_MATRIX_UNIT_FULL=1`` runs every case on all three backends (about two
minutes; done before each change to the model, not in CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hwbench.accuracy.numerics.matrix_unit import matrix_unit

DATA = Path(__file__).resolve().parent.parent / "data" / "tensor_core" / "vectors.npz"
FORMATS = {"fp16": "fp16", "bf16": "bf16", "tf32": "tf32", "E5M2": "fp8-e5m2", "E4M3": "fp8-e4m3"}
_VECTORS = np.load(DATA)
SETS = sorted(k.split("/", 1)[1] for k in _VECTORS.files if k.startswith("set/"))


def load(key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    gpu, fmt, out = key.split("/")
    a_key, b_key, c_key = (str(x) for x in _VECTORS[f"ref/{key}"])
    a, b, c = (_VECTORS[k].view(np.float32).astype(np.float64) for k in (a_key, b_key, c_key))
    if gpu in ("H100", "H200") and fmt in ("E5M2", "E4M3") and out == "fp32":
        c = np.zeros_like(c)
    if out == "fp16":
        c = c.astype(np.float16).astype(np.float64)
    return a, b, c, _VECTORS[f"set/{key}"]


def test_every_published_set_is_here() -> None:
    assert len(SETS) == 48
    gpus = {s.split("/")[0] for s in SETS}
    assert gpus == {"V100", "A100", "A2", "Ada", "L40S", "H100", "H200", "B200"}
    fp8_to_fp16 = {s for s in SETS if s.endswith("/fp16") and s.split("/")[1] in ("E4M3", "E5M2")}
    assert fp8_to_fp16 == {f"{g}/{f}/fp16" for g in ("Ada", "H100", "H200", "B200") for f in ("E4M3", "E5M2")}


@pytest.mark.parametrize("key", SETS)
def test_unit_reproduces_the_gpu(key: str) -> None:
    gpu, fmt, out = key.split("/")
    a, b, c, d = load(key)
    assert a.shape[0] == 5000
    unit = matrix_unit(gpu.lower(), FORMATS[fmt], out)
    got = unit.inner(a, b, c).astype(np.float32).view(np.uint32)
    bad = np.flatnonzero(got != d)
    assert bad.size == 0, f"{key}: {bad.size} of {d.size} differ (first: case {bad[0]})"
    full = bool(os.environ.get("HWBENCH_MATRIX_UNIT_FULL"))  # every case on every backend (slow)
    sample = slice(None) if full else slice(0, None, 25)
    # JAX compiles once per distinct arithmetic; the generations' flagships keep the test fast
    # (tests/accuracy/test_matrix_unit_backends.py holds JAX to the reference for every unit).
    backends = ("reference", "jax") if full or gpu in ("A100", "H100", "B200") else ("reference",)
    for backend in backends:
        other = unit.with_backend(backend).inner(a[sample], b[sample], c[sample])  # type: ignore[arg-type]
        assert np.array_equal(other.astype(np.float32).view(np.uint32), d[sample]), backend
