"""Faithful block-FMA GEMM vs native fp32 BLAS, side by side in one process.

Contenders, timed in turns (round-robin, min of ``--repeats`` turns each, so load changes on the
shared machine hit all alike), every one computing an M = N = K GEMM (default 1024):

* ``native fp32 BLAS``: ``np.matmul`` on float32 copies of the operands (the baseline);
* ``a100 tf32->fp32``: the A100 tensor-core model (4-term blocks, 1 extra alignment bit,
  truncation, round toward zero), ``MatrixUnit.matmul`` on the JAX backend;
* ``h100 fp16->fp32``: the H100 model (16-term blocks, 2 extra bits), same backend.

Operands are standard-normal values rounded to the input format (tf32 by truncating the fp32
significand to 10 bits, fp16 by a cast); C = 0. The first call of each model compiles (timed
separately, reported as ``compile``). Goal: <= 50x the native fp32 time.

``--sliced-in-step`` adds the previous implementation of the A100 model's JAX GEMM as a fourth
contender (same arithmetic, same bits, checked): each scan step slicing its block's operands
itself. XLA's CPU backend fuses those dynamic slices into the block's elementwise loop and then
emits that loop as scalar code; the model now passes each step its operands sliced one step
ahead, in the scan's carry, and the loop is vectorised.

    python benchmarks/matrix_units.py [--size 1024] [--repeats 3] [--sliced-in-step] [--json]

History (2 cores, shared host, load from other work; min of 3 turns; a100 tf32 ratio to native):

* first version (each scan step slicing its block's operands): 71x / 70x in two runs (5.79 s /
  6.02 s against 0.081 s / 0.086 s), h100 fp16 23x / 25x; 97.6x later on a quiet host.
* operands sliced one step ahead, in the scan's carry (XLA vectorises the block's loop), three
  runs with ``--sliced-in-step``, load average 10 to 14: 12.5x / 17.8x / 14.1x against
  40.5x / 58.3x / 37.7x for the first version in the same runs. Three plain runs: 14.2x /
  14.0x / 17.6x (h100 fp16: 7.5x / 10.0x / 11.9x).
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


def sliced_in_step(model: Any) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """The previous JAX GEMM of a fast-path model: each scan step slices its block's operands."""
    import jax

    from hwbench.accuracy.numerics.block_fma_vec import _fast_block, _nonzero_exponent

    jnp, lax, k = jax.numpy, jax.lax, model.block_terms

    def run(a: Any, b: Any, c: Any) -> Any:
        ea, eb = _nonzero_exponent(jnp, model, a), _nonzero_exponent(jnp, model, b)

        def body(d: Any, i: Any) -> tuple[Any, None]:
            blk_a = lax.dynamic_slice_in_dim(a, i * k, k, 1), lax.dynamic_slice_in_dim(ea, i * k, k, 1)
            blk_b = lax.dynamic_slice_in_dim(b, i * k, k, 0), lax.dynamic_slice_in_dim(eb, i * k, k, 0)
            return _fast_block(jnp, model, d, blk_a, blk_b), None

        return lax.scan(body, c, jnp.arange(a.shape[1] // k))[0]

    jitted = jax.jit(run)

    def call(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        with jax.enable_x64(True):
            return np.asarray(jitted(a, b, c))

    return call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024, help="M = N = K")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sliced-in-step", action="store_true", help="also time the previous A100 JAX GEMM")
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
    if args.sliced_in_step:
        before = sliced_in_step(a100.model)
        contenders["a100 tf32, sliced in step"] = lambda: before(a_tf32, b_tf32, c)
    compile_s, first = {}, {}
    for label, fn in contenders.items():
        t0 = time.perf_counter()
        first[label] = fn()
        compile_s[label] = time.perf_counter() - t0
    if args.sliced_in_step:  # the two A100 GEMMs must agree bit for bit
        assert np.array_equal(first["a100 tf32->fp32"], first["a100 tf32, sliced in step"])
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
            f"  {label:26s} {row['seconds']:9.4f} s   {row['ratio_to_native']:8.1f}x native"
            f"   (first call {row['first_call_seconds']:.2f} s)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
