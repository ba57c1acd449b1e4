"""Cold start of the ``hwbench`` command: how long ``hwbench --help`` and ``hwbench devices`` take.

Each command runs in a fresh interpreter (a subprocess), ``--repeat`` times; the minimum is
reported, next to a bare ``python -c pass`` measured in the same run, so the figure separates
hwbench's own imports from the interpreter's start-up on this machine. The target is under 1 s;
the test that guards it without timing anything is
``tests/test_cli_listing.py::test_listing_commands_do_not_import_heavy_frameworks``.

    python benchmarks/cli_startup.py [--repeat 5] [--top 15]

``--top N`` also prints the N slowest imports of ``hwbench devices`` (``python -X importtime``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 1.0  # the design target for `hwbench --help` / `hwbench devices` (docs/cli.md)


def hwbench_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m hwbench.cli.main``."""
    script = Path(sys.executable).with_name("hwbench")
    if script.exists():
        return [str(script)]
    found = shutil.which("hwbench")
    return [found] if found else [sys.executable, "-m", "hwbench.cli.main"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}


def cold(argv: list[str], repeat: int) -> float:
    """Minimum wall time of ``argv`` over ``repeat`` fresh processes (output discarded)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), check=False)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode().strip()[-500:]}")
        best = min(best, elapsed)
    return best


def slowest_imports(top: int) -> list[tuple[float, str]]:
    """The ``top`` largest cumulative import times of ``hwbench devices``, in seconds."""
    code = "import sys; from hwbench.cli.main import main; sys.exit(main(['devices', '--json']))"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=_env(), check=False
    )
    rows: list[tuple[float, str]] = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        rows.append((int(cumulative.strip()) / 1e6, name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes per command (min is reported)")
    parser.add_argument("--top", type=int, default=0, help="also print the N slowest imports of `devices`")
    args = parser.parse_args()

    hwbench = hwbench_command()
    baseline = cold([sys.executable, "-c", "pass"], args.repeat)
    print(f"hwbench: {' '.join(hwbench)}  (min of {args.repeat} cold runs each, {os.cpu_count()} CPUs)")
    print(f"{'command':<28}{'seconds':>9}{'x python':>10}{'minus python':>14}  target < {TARGET_S:.1f} s")
    print(f"{'python -c pass':<28}{baseline:>9.3f}{1.0:>10.1f}{0.0:>14.3f}")
    for extra in (["--help"], ["devices"], ["devices", "--json"]):
        seconds = cold(hwbench + extra, args.repeat)
        label = "hwbench " + " ".join(extra)
        verdict = "ok" if seconds < TARGET_S else "OVER"
        print(f"{label:<28}{seconds:>9.3f}{seconds / baseline:>10.1f}{seconds - baseline:>14.3f}  {verdict}")
    if args.top:
        print(f"\nslowest imports of `hwbench devices` (cumulative seconds, one run, {sys.executable} -X importtime):")
        for seconds, name in slowest_imports(args.top):
            print(f"{seconds:>9.3f}  {name}")


if __name__ == "__main__":
    main()
