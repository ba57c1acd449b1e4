"""Wall time of `hwbench audit` (quick and full) with a cold and a warm compilation cache.

The issue's targets: full audit (both protocols: reference, gold, ensemble, candidate) under 120 s
on a 2-core machine, `--quick` under 15 s. Each configuration runs the real CLI in a subprocess;
"cold" uses an empty cache directory (every program compiled), "warm" the same directory again.

    python benchmarks/audit_time.py                 # groq, quick and full
    python benchmarks/audit_time.py --only quick --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

TARGETS_S = {"quick": 15.0, "full": 120.0}


def run(device: str, quick: bool, cache: str) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "hwbench.cli.main", "audit", "--device", device, "--json"]
    if quick:
        cmd.append("--quick")
    env = {**__import__("os").environ, "HWBENCH_CACHE_DIR": cache}
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
    return elapsed, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="groq")
    parser.add_argument("--only", choices=("quick", "full"), default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for kind in ("quick", "full") if args.only is None else (args.only,):
        with tempfile.TemporaryDirectory() as cache:
            for state in ("cold", "warm"):
                wall, code = run(args.device, kind == "quick", cache)
                rows.append(
                    {
                        "audit": kind,
                        "cache": state,
                        "wall_s": wall,
                        "exit": code,
                        "target_s": TARGETS_S[kind],
                        "ratio_to_target": wall / TARGETS_S[kind],
                    }
                )
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"{'audit':6} {'cache':5} {'wall s':>8} {'target s':>9} {'wall/target':>12} exit")
        for r in rows:
            print(
                f"{r['audit']:6} {r['cache']:5} {r['wall_s']:8.1f} {r['target_s']:9.0f} {r['ratio_to_target']:12.2f} "
                f"{r['exit']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
