"""Cold start of the ``hwbench`` command: how long ``hwbench --help`` and ``hwbench devices`` take.

Each command runs in a fresh interpreter (a subprocess), ``--repeat`` times; the minimum is
reported, next to a bare ``python -c pass`` measured in the same run, so the figure separates
hwbench's own imports from the interpreter's start-up on this machine. The targets: under 1 s for
``--help``, and issue 31's 0.3 s for ``hwbench devices`` (2-core machine); the tests that guard
them without timing anything are
``tests/test_cli_listing.py::test_listing_commands_do_not_import_heavy_frameworks``,
``::test_devices_imports_no_numpy`` and ``tests/cli/test_plain_table.py::test_devices_imports_no_rich``.
Bytecode is compiled as in an installed package (``PYTHONDONTWRITEBYTECODE`` is dropped for the
runs, and one untimed run of each command writes it).

``--baseline-tree DIR`` times another checkout of hwbench alongside (e.g. main's tree,
``git archive main | tar -x -C DIR``; run with ``PYTHONPATH=DIR``). All commands of both trees
run round-robin, so load from other processes hits them alike.

    python benchmarks/cli_startup.py [--repeat 5] [--top 15] [--baseline-tree DIR]

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
DEVICES_GOAL_S = 0.3  # issue 31: `hwbench devices` on a 2-core machine


def hwbench_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m hwbench.cli.main``."""
    script = Path(sys.executable).with_name("hwbench")
    if script.exists():
        return [str(script)]
    found = shutil.which("hwbench")
    return [found] if found else [sys.executable, "-m", "hwbench.cli.main"]


def _env(tree: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, env.get("PYTHONPATH")) if p)
    return env


def once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process running ``argv`` (output discarded).

    CPU time is the steadier figure on a shared machine: waiting for a core does not count."""
    start = time.perf_counter()
    # from / : `python -m` puts the working directory first on sys.path, where it would win over PYTHONPATH
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err.decode().strip()[-500:]}")
    return elapsed, usage.ru_utime + usage.ru_stime


def round_robin(runs: dict[str, tuple[list[str], dict[str, str]]], repeat: int) -> dict[str, tuple[float, float]]:
    """Minimum wall and CPU time of each (argv, env) over ``repeat`` turns, one fresh process each, interleaved."""
    for argv, env in runs.values():
        once(argv, env)  # untimed: writes the bytecode
    best = dict.fromkeys(runs, (float("inf"), float("inf")))
    for _ in range(repeat):
        for label, (argv, env) in runs.items():
            wall, cpu = once(argv, env)
            best[label] = (min(best[label][0], wall), min(best[label][1], cpu))
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
    parser.add_argument("--baseline-tree", default=None, help="another hwbench checkout to time alongside")
    args = parser.parse_args()

    hwbench = [sys.executable, "-m", "hwbench.cli.main"] if args.baseline_tree else hwbench_command()
    here = str(Path(__file__).resolve().parents[1]) if args.baseline_tree else None  # both trees by PYTHONPATH
    trees = {"": here, **({"baseline ": args.baseline_tree} if args.baseline_tree else {})}
    runs = {"python -c pass": ([sys.executable, "-c", "pass"], _env())}
    for prefix, tree in trees.items():
        for extra in (["--help"], ["devices"], ["devices", "--json"]):
            runs[prefix + "hwbench " + " ".join(extra)] = (hwbench + extra, _env(tree))
    best = round_robin(runs, args.repeat)
    py_wall, py_cpu = best["python -c pass"]
    print(f"hwbench: {' '.join(hwbench)}  (min of {args.repeat} cold runs each, round-robin, {os.cpu_count()} CPUs)")
    print(f"{'command':<34}{'wall s':>8}{'x python':>9}{'CPU s':>8}{'x python':>9}  target (wall)")
    for label, (wall, cpu) in best.items():
        goal = DEVICES_GOAL_S if label.endswith("hwbench devices") else TARGET_S
        verdict = "" if label.startswith("python") else f"< {goal:.1f} s " + ("ok" if wall < goal else "OVER")
        print(f"{label:<34}{wall:>8.3f}{wall / py_wall:>9.2f}{cpu:>8.3f}{cpu / py_cpu:>9.2f}  {verdict}")
    for label, (wall, cpu) in best.items():
        base = best.get("baseline " + label)
        if base:
            print(f"{label}: this tree / baseline tree: wall {wall / base[0]:.2f}x, CPU {cpu / base[1]:.2f}x")
    if args.top:
        print(f"\nslowest imports of `hwbench devices` (cumulative seconds, one run, {sys.executable} -X importtime):")
        for seconds, name in slowest_imports(args.top):
            print(f"{seconds:>9.3f}  {name}")


if __name__ == "__main__":
    main()
