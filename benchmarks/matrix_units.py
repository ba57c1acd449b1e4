"""Faithful block-FMA GEMM vs native fp32 BLAS, side by side in one process.

Contenders, timed in turns (round-robin, min of ``--repeats`` turns each, so load changes on the
shared machine hit all alike), every one computing an M = N = K GEMM (default 1024):

* ``native fp32 BLAS``: ``np.matmul`` on float32 copies of the operands (the baseline);
* ``a100 tf32->fp32``: the A100 tensor-core model (4-term blocks, 1 extra alignment bit,
  truncation, round toward zero), ``MatrixUnit.matmul`` on the JAX backend;
* ``h100 fp16->fp32``: the H100 model (16-term blocks, 2 extra bits), same backend.

Operands are standard-normal values rounded to the input format (tf32 by truncating the fp32
significand to 10 bits, fp16 by a cast); C = 0. The first call of each model compiles (timed
separately, reported as ``compile``). Goal (issue 29): <= 50x the native fp32 time.

    python benchmarks/matrix_units.py [--size 1024] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hwbench.accuracy.numerics.matrix_unit import matrix_unit


def _tf32(x: np.ndarray) -> np.ndarray:
    bits = x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    return bits.view(np.float32).astype(np.float64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024, help="M = N = K")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    a_tf32, b_tf32 = _tf32(x), _tf32(y)
    a_fp16, b_fp16 = x.astype(np.float16).astype(np.float64), y.astype(np.float16).astype(np.float64)
    a32, b32 = x.astype(np.float32), y.astype(np.float32)
    c = np.zeros((n, n))
    a100 = matrix_unit("a100", "tf32", "fp32", backend="jax")
    h100 = matrix_unit("h100", "fp16", "fp32", backend="jax")
    contenders: dict[str, Callable[[], Any]] = {
        "native fp32 BLAS": lambda: np.matmul(a32, b32),
        "a100 tf32->fp32": lambda: a100.matmul(a_tf32, b_tf32, c),
        "h100 fp16->fp32": lambda: h100.matmul(a_fp16, b_fp16, c),
    }
    compile_s = {}
    for label, fn in contenders.items():
        t0 = time.perf_counter()
        fn()
        compile_s[label] = time.perf_counter() - t0
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(args.repeats):
        for label, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            best[label] = min(best[label], time.perf_counter() - t0)
    base = best["native fp32 BLAS"]
    rows = {
        label: {"seconds": t, "ratio_to_native": t / base, "first_call_seconds": compile_s[label]}
        for label, t in best.items()
    }
    if args.json:
        print(json.dumps({"size": n, "repeats": args.repeats, "results": rows}, indent=2))
        return 0
    print(f"GEMM {n}^3, min of {args.repeats} interleaved turns")
    for label, row in rows.items():
        print(
            f"  {label:18s} {row['seconds']:9.4f} s   {row['ratio_to_native']:8.1f}x native"
            f"   (first call {row['first_call_seconds']:.2f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
