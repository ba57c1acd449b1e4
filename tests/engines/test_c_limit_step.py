"""The hand-written C loop of ``benchmarks/io_engines.py`` computes the io-ehh model hwbench computes.

The C loop (``benchmarks/io_ehh_step.c``) is the benchmark's limit contender: its time only means
something if it does the same work. Not the same bits: its exp is its own polynomial, not XLA's,
and GCC contracts a*b + c into fused multiply-adds that round once where XLA rounds twice, so the
float32 trajectories part by rounding. The yardstick is float32 itself: measured against the
float64 run of the same workload, the C loop must be about as close as hwbench's own float32 JAX
run is (within 2x of its largest deviation), and spike where it spikes. A modelling slip (a wrong
constant, a current's sign, a junction summed twice) moves voltages by millivolts and spikes by
milliseconds, far outside that. Skipped, with the reason, where no C compiler is found.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from hwbench.core.plugins import load_registry

pytest.importorskip("jax")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
MS = 300  # long enough for the driven cells (and some of their neighbours) to spike
DRIVE = 6.0  # uA/cm^2 into a third of the cells: spikes, so the sodium and calcium paths are exercised


def c_step() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        module = importlib.import_module("_c_step")
    finally:
        sys.path.remove(str(BENCHMARKS))
    why = module.unavailable()
    if why:
        pytest.skip(f"the C limit contender cannot run here: {why}")
    return module


@pytest.mark.parametrize(("size", "connected"), [(729, True), (64, False)], ids=["729-connected", "64-unconnected"])
def test_c_loop_is_as_close_to_float64_as_hwbench_float32_and_spikes_alike(size: int, connected: bool) -> None:
    module = c_step()
    registry = load_registry(entry_point_plugins=False, env={})
    kernel, jax_engine = registry.kernel("io-ehh"), registry.engine("jax")
    workload = kernel.make_workload(size, connected=connected, seed=42)
    inputs = {"I_app": np.where(np.random.default_rng(1).random(size) < 1 / 3, DRIVE, 0.0)}
    c = module.CLoop(workload, kernel.info.sample_every).run(workload.state0, inputs, MS)
    f32 = jax_engine.build(kernel, workload, dtype="float32").run(workload.state0, inputs, MS)
    f64 = jax_engine.build(kernel, workload, dtype="float64").run(workload.state0, inputs, MS)

    def deviation(out: Any) -> float:
        return float(np.abs(np.asarray(out.probes, dtype=np.float64) - f64.probes).max())

    spikes = {name: np.asarray(out.spikes) >= 0 for name, out in (("c", c), ("f32", f32), ("f64", f64))}
    assert spikes["f64"].any(axis=0).mean() > 0.25  # the drive makes a good part of the network spike
    np.testing.assert_array_equal(spikes["c"].sum(axis=0), spikes["f32"].sum(axis=0))  # spikes per cell
    assert deviation(c) <= 2 * deviation(f32), (deviation(c), deviation(f32))
    assert np.isfinite(c.state).all() and c.state.dtype == np.float32


def test_c_loop_refuses_per_cell_parameters() -> None:
    """It takes the defaults' scalar parameters only: a per-cell g_CaL would be computed wrong, not slowly."""
    module = c_step()
    kernel = load_registry(entry_point_plugins=False, env={}).kernel("io-ehh")
    workload = kernel.make_workload(64, connected=False, seed=0, g_CaL=np.linspace(0.5, 1.4, 64))
    with pytest.raises(ValueError, match="per-cell: g_CaL"):
        module.CLoop(workload, kernel.info.sample_every)


def _benchmark(env: dict[str, str] | None = None) -> Any:
    """``benchmarks/io_engines.py`` on 64 cells, JAX and the C loop, one 2 ms run each, as JSON."""
    import json
    import os
    import subprocess

    argv = [sys.executable, str(BENCHMARKS / "io_engines.py"), "--sizes", "64", "--engines", "jax,c-loop"]
    proc = subprocess.run(
        [*argv, "--ms", "2", "--repeat", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_benchmark_prints_the_floor_and_the_ratio_to_the_c_loop() -> None:
    c_step()  # skips where the C loop cannot run
    out = _benchmark()
    rows = {r["engine"]: r for r in out["rows"]}
    assert set(rows) == {"jax", "c-loop"}
    limit = out["meta"]["limit"]
    assert limit["peak_flops"] > 1e9 and limit["peak_source"].startswith("measured")
    kernel = load_registry(entry_point_plugins=False, env={}).kernel("io-ehh")
    workload = kernel.make_workload(64, connected=True, seed=0)
    for row in rows.values():
        assert row["flops_per_cell_step"] == kernel.flops_per_step(workload) / 64  # the kernel's own counts
        assert row["bytes_per_cell_step"] == kernel.bytes_per_step(workload) / 64
        assert row["floor_us_per_step"] > 0 and row["ratio_to_floor"] == row["us_per_step"] / row["floor_us_per_step"]
    (goal,) = out["goal"]
    assert (
        goal["fastest"] == "jax"
        and goal["time_vs_c_loop"] == rows["jax"]["us_per_step"] / rows["c-loop"]["us_per_step"]
    )


def test_benchmark_skips_the_c_loop_with_the_reason_where_no_compiler_is_found(tmp_path: Path) -> None:
    """No compiler on PATH and none in $CC: the C loop and the peak are left out, saying why."""
    out = _benchmark({"PATH": str(tmp_path), "CC": ""})
    reason = "no C compiler found ($CC, cc, gcc)"
    assert out["meta"]["skipped"] == {"c-loop": reason}
    assert out["meta"]["limit"]["peak_flops"] is None
    assert reason in out["meta"]["limit"]["peak_source"]
    assert [r["engine"] for r in out["rows"]] == ["jax"]
    assert "time_vs_c_loop" not in out["goal"][0]
