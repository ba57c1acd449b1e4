"""How far the CPU reference's fp32 exp / log / pow are from correctly rounded, and whether it contracts.

The audit's fp32 reference is what the engine computes natively: on the JAX engine XLA:CPU's own
vectorised approximations of exp / log / pow (XLA emits polynomial code for them; it does not
call the C library), on the numpy engine numpy's float32 loops (SIMD approximations on x86 where
available). Neither is correctly rounded. This script measures both against an exact reference
(mpmath at 96 bits, rounded once to binary32) over a sweep, and reports per function: the
maximum error in ulps of the exact value, the fraction of arguments not correctly rounded, and
the largest distance in representable steps from the correctly rounded value. It also checks
whether XLA:CPU fuses ``a * b + c`` (FMA contraction) on this host.

    python scripts/measure_reference_libm.py            # 20,000 arguments per function
    python scripts/measure_reference_libm.py --n 100000

The fp64 gold bounds all of this: its own error is ~2^-29 of the fp32 ulp.
"""

from __future__ import annotations

import argparse
import platform
import sys

import numpy as np


def exact32(fn: object, *args: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact value (as float64, enough to measure ulps of fp32) and its binary32 rounding.

    The 96-bit value is rounded to 24 bits by mpmath itself (one rounding; going through float64
    first would round twice). Arguments whose result is subnormal in fp32 are not in the sweeps.
    """
    import mpmath

    mpmath.mp.prec = 96
    vals = [fn(*(mpmath.mpf(float(a[i])) for a in args)) for i in range(len(args[0]))]  # type: ignore[operator]
    exact = np.array([float(v) for v in vals], dtype=np.float64)
    with mpmath.workprec(24):
        rounded = np.array([float(+v) for v in vals], dtype=np.float64)
    with np.errstate(over="ignore"):
        return exact, rounded.astype(np.float32)  # exact: a 24-bit value converts without rounding


def ulp32(x: np.ndarray) -> np.ndarray:
    """The binary32 ulp at |x| (subnormal spacing below the smallest normal)."""
    e = np.floor(np.log2(np.maximum(np.abs(x), np.finfo(np.float32).tiny)))
    return np.ldexp(1.0, (e - 23).astype(np.int64))


def report(name: str, got: np.ndarray, exact: np.ndarray, rounded: np.ndarray) -> str:
    ok = np.isfinite(exact) & (np.abs(exact) < float(np.finfo(np.float32).max))
    g, x, r = got[ok].astype(np.float64), exact[ok], rounded[ok]
    err = np.abs(g - x) / ulp32(x)
    steps = np.abs(got[ok].view(np.int32).astype(np.int64) - r.view(np.int32).astype(np.int64))
    return f"| {name} | {ok.sum()} | {err.max():.3f} | {np.mean(steps > 0) * 100:.2f} % | {steps.max()} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000, help="arguments per function (default 20,000)")
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp
    import mpmath

    rng = np.random.default_rng(30)
    n = args.n
    xe = np.concatenate([rng.uniform(-87, 88, n // 2), rng.uniform(-20, 20, n - n // 2)]).astype(np.float32)
    xl = np.exp(rng.uniform(-80, 80, n)).astype(np.float32)
    xb = rng.uniform(0.05, 20, n).astype(np.float32)
    yb = rng.uniform(-8, 8, n).astype(np.float32)
    cases = [
        ("exp", (xe,), mpmath.exp, jnp.exp, np.exp),
        ("log", (xl,), mpmath.log, jnp.log, np.log),
        ("pow", (xb, yb), mpmath.power, jnp.power, np.power),
    ]
    print(f"host: {platform.processor() or platform.machine()}; jax {jax.__version__}, numpy {np.__version__}")
    print("| function (engine) | arguments | max error (ulp) | not correctly rounded | max steps from CR |")
    print("|---|---|---|---|---|")
    for name, xs, exact_fn, jfn, nfn in cases:
        exact, rounded = exact32(exact_fn, *xs)
        print(report(f"{name} (JAX, XLA:CPU)", np.asarray(jax.jit(jfn)(*xs)), exact, rounded))
        with np.errstate(all="ignore"):
            print(report(f"{name} (numpy)", nfn(*xs), exact, rounded))
    a, b, c = (rng.standard_normal(100_000).astype(np.float32) for _ in range(3))
    jitted = np.asarray(jax.jit(lambda p, q, r: p * q + r)(a, b, c))
    fused = (a.astype(np.float64) * b + c).astype(np.float32)
    same_fused, same_separate = np.mean(jitted == fused) * 100, np.mean(jitted == a * b + c) * 100
    print(
        f"XLA:CPU a*b+c under jit equals the fused (single-rounding) result for {same_fused:.2f} % of 100,000 "
        f"random arguments; the separately rounded a*b then +c for {same_separate:.2f} %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
