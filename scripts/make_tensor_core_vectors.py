"""Pack the published real-GPU tensor-core vectors into tests/data/tensor_core/vectors.npz.

Source: github.com/north-numerical-computing/MATLAB-tensor-core (BSD-2, Khattak & Mikaitis),
folder ``model_validation/``: for each GPU (V100, A2, A100, Ada, L40S, H100, H200, B200) and
input format, rows of K inputs ``a``, ``b`` (hex fp32 bit patterns, one row per line), ``c``
(fp32, one 32-bit binary string per line) and the outputs ``d`` the GPU computed (fp32 or fp16
values written as fp32 bits; fp16 outputs for fp16 inputs on every GPU and for fp8 inputs on Ada,
H100, H200 and B200). 5,000 cases per set. Every case is kept: files that are identical across
GPUs (the same a, b, c were sent to several chips) are stored once, so all 48 sets (240,000 cases)
take about 3 MB compressed.

    python scripts/make_tensor_core_vectors.py PATH/TO/MATLAB-tensor-core

Layout of the npz: ``in/<sha1>`` uint32 arrays (fp32 bit patterns: a and b as (5000, K), c as
(5000,)), and per set ``set/<GPU>/<FMT>/<OUT>`` = uint32 d bits, with ``ref/<GPU>/<FMT>/<OUT>``
naming the three input keys (a, b, c). Reading conventions follow the repository's
``Validate_TC_models.m``: fp16 outputs are compared with c rounded to fp16 (nearest even, as the
CUDA harness did), and H100 / H200 fp8 runs with fp32 outputs used c = 0 (WGMMA accumulates into
D); their fp16-output runs (``mma_fp8_output_fp16.cu``, mma.sync) used c rounded to fp16.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "tensor_core"

GPUS = {
    "V100": ["fp16"],
    "A100": ["fp16", "bf16", "tf32"],
    "A2": ["fp16", "bf16", "tf32"],
    "Ada": ["fp16", "bf16", "tf32", "E5M2", "E4M3"],
    "L40S": ["fp16", "bf16", "tf32", "E5M2", "E4M3"],
    "H100": ["fp16", "bf16", "tf32", "E5M2", "E4M3"],
    "H200": ["fp16", "bf16", "tf32", "E5M2", "E4M3"],
    "B200": ["fp16", "bf16", "tf32", "E5M2", "E4M3"],
}


def _hex_rows(path: Path) -> np.ndarray:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return np.array([[int(t, 16) for t in r] for r in rows], dtype=np.uint32)


def _bin_lines(path: Path) -> np.ndarray:
    return np.array([int(t, 2) for t in path.read_text().split()], dtype=np.uint32)


def main(repo: Path) -> None:
    base = repo / "model_validation"
    arrays: dict[str, np.ndarray] = {}

    def keep(arr: np.ndarray) -> str:
        key = "in/" + hashlib.sha1(arr.tobytes() + str(arr.shape).encode()).hexdigest()[:16]
        arrays.setdefault(key, arr)
        return key

    for gpu, fmts in GPUS.items():
        for fmt in fmts:
            folder = base / gpu / fmt
            a = keep(_hex_rows(folder / f"a_{gpu}_{fmt}.txt"))
            b = keep(_hex_rows(folder / f"b_{gpu}_{fmt}.txt"))
            c = keep(_bin_lines(folder / f"c_{gpu}_fp32.txt"))
            for out in ("fp16", "fp32"):
                if not (folder / f"d_{gpu}_{out}.txt").exists():  # fp16 outputs: fp16 and fp8 inputs
                    continue
                arrays[f"set/{gpu}/{fmt}/{out}"] = _bin_lines(folder / f"d_{gpu}_{out}.txt")
                arrays[f"ref/{gpu}/{fmt}/{out}"] = np.array([a, b, c])
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "vectors.npz", **arrays)  # type: ignore[arg-type]
    shutil.copyfile(repo / "LICENCE", OUT / "LICENCE")
    sets = sum(k.startswith("set/") for k in arrays)
    print(f"{sets} sets, {len(arrays) - 2 * sets} distinct input arrays -> {OUT / 'vectors.npz'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/make_tensor_core_vectors.py PATH/TO/MATLAB-tensor-core")
    main(Path(sys.argv[1]))
