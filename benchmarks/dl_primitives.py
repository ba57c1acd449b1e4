"""DL-primitive speed ratios, measured side by side in one process (min of N runs each).

1. gemm_k4 (2560^3) fp32 on the CPU: each hwbench engine (numpy, JAX, TensorFlow) vs numpy's BLAS called directly (goal:
   the fastest engine within 10 %), and the fraction of the host's derived fp32 peak.
2. Emulated TF32 GEMM by operand rounding (the A100 TensorRT profile without its tensor-core
   model: operands rounded to TF32, one native fp32 product) vs the native fp32 run on the same
   engine (goal <= 1.3x). The DL audit now runs the a100 / h100 GEMMs on the block-FMA model of
   their tensor cores (numpy only, far slower); that model is not timed here.
3. Emulated TPU HIGH (bf16x3: split, three native fp32 products) vs native fp32 (goal <= 4x).

Emulation cost is O(inputs) — 2 x 2560^2 roundings against 2560^3 multiply-adds — because
rounded operands times rounded operands are exact in fp32 (TF32 / fp16: 11 + 11 = 22 significant
bits, bf16: 8 + 8 <= 24), so a native fp32 product *is* "exact products, fp32 accumulation" up
to summation order (which the γ_K bound covers). The machine is shared: ratios, not absolute
times, are the result. Contenders run round-robin (each round times every contender once, in
turn) and each keeps its minimum, so a load change hits all of them alike.

    python benchmarks/dl_primitives.py [--repeats 5] [--size 2560] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from hwbench.core.errors import UnavailableError
from hwbench.core.plugins import get_registry
from hwbench.plugins.devices.arithmetic import ops_wrapper
from hwbench.plugins.kernels.dl import execute
from hwbench.plugins.kernels.dl.audit import DLCandidate, candidate_profile
from hwbench.plugins.kernels.dl.kernels import GemmKernel
from hwbench.plugins.kernels.dl.peak import host_peak

# Variables that change numpy's BLAS kernels or threads; printed with the result (OPENBLAS_CORETYPE
# forces a kernel family: every numpy contender, native and emulated, runs under the same setting).
BLAS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")


def round_robin(contenders: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Minimum wall time of each contender over ``repeats`` rounds, every round running each once
    in turn (after one untimed warm-up / compile call each): load changes hit all alike."""
    for fn in contenders.values():
        fn()
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(repeats):
        for label, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            best[label] = min(best[label], time.perf_counter() - t0)
    return best


def operand_rounding(profile: Any) -> Any:
    """The profile's GEMM as operand rounding (operands rounded to the input format, one native fp32
    product): the a100 profiles now put their GEMMs on the tensor core's block-FMA model
    (``matrix_unit``), which this approximation is measured against."""
    params = {k: v for k, v in profile.parameters.items() if k != "matrix_unit"}
    return profile.model_copy(update={"parameters": params, "name": profile.name + "-operand-rounding"})


def contenders(n: int) -> dict[str, Callable[[], Any]]:
    """numpy's BLAS called directly, each engine's native fp32 GEMM and the emulated modes (each
    called once here: an engine that cannot run one is reported, not timed)."""
    registry = get_registry()
    kernel = GemmKernel()
    wl = kernel.make_workload(n, m=n, k=n, seed=0)
    a, b = wl.arrays["A"], wl.arrays["B"]
    out: dict[str, Callable[[], Any]] = {"numpy BLAS (np.matmul)": lambda: np.matmul(a, b)}
    for engine in ("numpy", "jax", "tensorflow"):
        try:
            out[f"hwbench {engine} fp32"] = execute.runner(kernel, wl, engine, "float32")
        except UnavailableError as exc:  # TensorFlow not installed
            print(f"  ({engine}: not measured: {exc})")
    emulated = (
        (operand_rounding(candidate_profile(registry, DLCandidate("a100", "tensorrt"))), "TF32"),
        (candidate_profile(registry, DLCandidate("tpu-v3", "high")), "TPU HIGH bf16x3"),
    )
    for profile, label in emulated:
        wrap = ops_wrapper(profile, 0)
        for engine in ("numpy", "jax"):
            try:
                run = execute.runner(kernel, wl, engine, "float32", wrap)
                run()
            except Exception as exc:  # an engine the emulation cannot trace: say so, keep the others
                print(f"  ({engine} {label}: not measured: {exc.__class__.__name__}: {exc})")
                continue
            out[f"hwbench {engine} {label} (emulated)"] = run
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="round-robin rounds (min of them is kept)")
    parser.add_argument("--size", type=int, default=2560, help="M = N = K (gemm_k4: 2560)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repeats < 1 or args.size < 1:
        parser.error("--repeats and --size must be positive integers")
    n = args.size
    flops = 2.0 * n**3
    t = round_robin(contenders(n), args.repeats)
    peak = host_peak("fp32")
    blas = t["numpy BLAS (np.matmul)"]
    fastest = min(v for k, v in t.items() if k.startswith("hwbench") and k.endswith("fp32"))
    ratios = {
        "fastest hwbench engine / numpy BLAS (goal <= 1.10)": fastest / blas,
        "jax fp32 / numpy BLAS": t["hwbench jax fp32"] / blas,
        "fraction of derived fp32 peak (fastest engine)": (flops / fastest / 1e12) / peak.tflops if peak else None,
    }
    for engine in ("numpy", "jax"):
        native = t[f"hwbench {engine} fp32"]
        for label, goal in (("TF32", 1.3), ("TPU HIGH bf16x3", 4.0)):
            key = f"hwbench {engine} {label} (emulated)"
            if key in t:
                ratios[f"{engine}: {label} emulated / native fp32 (goal <= {goal:g})"] = t[key] / native
    result = {
        "size": n,
        "repeats": args.repeats,
        "times_s": t,
        "gflops": {k: flops / v / 1e9 for k, v in t.items()},
        "ratios": ratios,
        "peak": None if peak is None else {"tflops": peak.tflops, "how": peak.source},
        "blas_env": {k: os.environ[k] for k in BLAS_ENV if k in os.environ},
        "note": "shared 2-core machine: min of round-robin rounds, contenders interleaved in one process",
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for k, v in t.items():
        print(f"{k:45s} {v * 1e3:9.1f} ms  {flops / v / 1e9:7.1f} GFLOPS")
    for k, v in ratios.items():
        print(f"{k:65s} {'-' if v is None else f'{v:.3f}'}")
    if peak:
        print(f"peak: {peak.tflops * 1e3:.0f} GFLOPS fp32, {peak.source}")
    print(f"BLAS environment: {result['blas_env'] or 'none of ' + ', '.join(BLAS_ENV) + ' set'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
