"""`hwbench run` and `hwbench bench` end to end through the real CLI, without mocks.

Covered:

* ``run --out``: the file is a valid ``RunResult``; traces are [samples][probed cells], finite and in
  a physiological range; the timing record is complete and self-consistent; ``--probe-cells`` is
  honoured; a connected network annotates each probed cell with its grid position (the same as the
  workload's), an unconnected one has no annotations.
* ``--save-workload`` / ``--workload``: a saved workload reproduces the run bit for bit.
* the numpy and JAX engines agree to a float32 tolerance.
* bad input (unknown names, impossible sizes, bad --ms / --repeats, malformed workload file, the
  memory guard, contradictory bench flags): the documented exit code, one ``error:`` line naming
  what is allowed, no traceback and no output file left behind.
* ``bench --out DIR``: a valid ``BenchResult`` with consistent timings for connected and unconnected
  networks, and a PNG plot.

Successful runs call ``hwbench.cli.main.main`` (the console-script entry point) in process, which is
fast; failures run a fresh interpreter, so exit code and stderr are exactly what a user sees.
Everything uses the io-ehh kernel on 64 cells (a 4^3 torus) for 2 ms on the CPU.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hwbench.cli.main import main
from hwbench.core import plugins as host
from hwbench.core.bench import STUDY_SEED
from hwbench.core.errors import EXIT_UNAVAILABLE, EXIT_USAGE
from hwbench.core.kernel import Workload
from hwbench.core.results import BenchResult, RunResult, Timing
from hwbench.core.runner import host_memory_estimate

CELLS = 64  # the smallest connected io-ehh network: a 4^3 torus
NGJ = 640  # directed gap junctions of that network: mean degree 10 x 64 cells (the study's rounding: exact here)
MS = 2.0  # simulated time; io-ehh samples V_soma every 1 ms
SAMPLE_MS = 1.0
STEPS_PER_SAMPLE = 40  # dt = 0.025 ms
NSAMPLES = round(MS / SAMPLE_MS)
V_RANGE_MV = (-100.0, 60.0)  # plausible somatic voltages (the run stays near -65..-50 mV)
# numpy vs JAX, float32, 80 steps. Each engine's float32 result differs from the float64 run of the
# same workload by up to about 1.6e-5 (numpy) and 1.8e-5 (JAX) mV, so two correct float32 engines
# may differ by their sum, ~3.4e-5 mV; the bound leaves a factor of 3 on that (about 26 float32 ulps
# at 60 mV). Observed: at most 3.8e-6 mV (one ulp). A modelling difference (wrong gap-junction sum,
# permuted cells, wrong dt) moves voltages by millivolts and fails it.
ENGINE_ATOL_MV = 1e-4
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RUN_DEFAULTS = {"--kernel": "io-ehh", "--device": "cpu", "--engine": "numpy", "--cells": str(CELLS), "--ms": f"{MS:g}"}


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test loads the plugins itself, unaffected by the caller's HWBENCH_* settings."""
    for key in ("HWBENCH_LOAD_PLUGINS", "HWBENCH_DISABLE_PLUGINS", "HWBENCH_STRICT_PLUGINS", "HWBENCH_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    host.reset_registry()
    yield
    host.reset_registry()


# ----------------------------------------------------------------------------------------- helpers
def run_argv(*extra: str, **options: str | None) -> list[str]:
    """``run`` with the tiny defaults; ``options`` override them by name (``cells="700"``, ``None`` drops one)."""
    merged = dict(RUN_DEFAULTS)
    for name, value in options.items():
        merged[f"--{name.replace('_', '-')}"] = value
    argv = ["run"]
    for flag, value in merged.items():
        if value is not None:
            argv += [flag, value]
    return [*argv, *extra]


def bench_argv(*extra: str, engine: str = "numpy") -> list[str]:
    """``bench`` of the 64-cell network, connected and unconnected, min of 2 runs."""
    options = ["--kernel", "io-ehh", "--device", "cpu", "--engine", engine, "--cells", str(CELLS), "--ms", f"{MS:g}"]
    return ["bench", *options, "--repeats", "2", *extra]


def cli_ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the CLI in process; it must succeed without a traceback. Returns stderr."""
    code = main(list(argv))
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in err
    return err


def hwbench(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter, as a user runs it (no HWBENCH_* settings inherited)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    return subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def assert_clean_failure(proc: subprocess.CompletedProcess[str], code: int, *fragments: str) -> str:
    """The documented exit code, one ``error:`` line (the last) containing ``fragments``, no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    assert proc.stdout == ""
    return errors[0]


def load_run(path: Path) -> RunResult:
    return RunResult.model_validate_json(path.read_text())


def reference_workload(size: int = CELLS) -> Workload:
    """The workload `run` builds by default (the study's seed, 42), made directly through the kernel."""
    kernel = host.load_registry(entry_point_plugins=False, env={}).kernel("io-ehh")
    return kernel.make_workload(size, seed=STUDY_SEED)


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def assert_traces(result: RunResult, ncells: int) -> np.ndarray:
    """[samples][probed cells], finite, in a plausible mV range. Returns them as an array."""
    traces = np.asarray(result.traces)
    assert traces.shape == (NSAMPLES, ncells)
    assert np.isfinite(traces).all()
    assert traces.min() > V_RANGE_MV[0] and traces.max() < V_RANGE_MV[1], (traces.min(), traces.max())
    assert np.ptp(traces) > 0.1  # cells start at different voltages: not a constant fill
    return traces


def assert_timing(t: Timing, *, engine: str, ncells: int, ngj: int, connected: bool, repeats: int) -> None:
    """A complete timing record whose derived numbers follow from its measurements."""
    assert (t.kernel, t.device, t.mode, t.execution) == ("io-ehh", "cpu", "fp32", "real")
    assert t.engine.split(" ")[0] == engine and t.dtype == "float32"
    assert (t.ncells, t.ngj, t.connected) == (ncells, ngj, connected)
    assert t.steps == NSAMPLES * STEPS_PER_SAMPLE
    assert t.simulated_ms == pytest.approx(MS)
    assert t.setup_s > 0
    assert len(t.run_s_all) == repeats and all(s > 0 for s in t.run_s_all)
    assert t.run_s == min(t.run_s_all)
    assert t.us_per_step == pytest.approx(t.run_s / t.steps * 1e6, rel=1e-9)
    assert t.rtf == pytest.approx(t.run_s / (t.simulated_ms / 1000.0), rel=1e-9)
    assert t.cell_steps_per_s == pytest.approx(t.ncells * t.steps / t.run_s, rel=1e-9)
    for value in (t.us_per_step, t.rtf, t.cell_steps_per_s):
        assert math.isfinite(value) and value > 0


def assert_memory(t: Timing) -> None:
    """The configuration's peak host memory: measured on Linux, within the host guard's estimate
    (which sizes are refused by), the process's resident size at its start. It may be 0: a 64-cell
    run in a test process of several GiB can live in memory the allocator already holds
    (tests/test_peak_memory.py checks that a phase counts what it allocates)."""
    memory = t.memory
    assert memory is not None
    kernel = host.load_registry(entry_point_plugins=False, env={}).kernel("io-ehh")
    assert memory.estimate_bytes == host_memory_estimate(kernel, t.ncells, t.connected)
    if not Path("/proc/self/clear_refs").exists():
        assert memory.status == "not measured" and memory.reason
        return
    assert memory.status == "measured" and "VmHWM" in memory.method
    assert memory.peak_bytes is not None and memory.start_bytes is not None
    assert 0 <= memory.peak_bytes <= memory.estimate_bytes
    assert memory.start_bytes > 10 * 2**20  # an interpreter with numpy loaded: tens of MiB at least


# --------------------------------------------------------------------------------------------- run
def test_run_writes_a_valid_result_with_probed_cells_and_positions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    cli_ok(capsys, *run_argv("--probe-cells", "5", "--repeats", "2", "--out", str(out)))
    result = load_run(out)
    assert result.schema_ == "hwbench.run/1"
    assert result.probe == "V_soma" and result.sample_interval_ms == SAMPLE_MS
    assert result.probe_cells == [0, 1, 2, 3, 4]
    assert_traces(result, 5)
    assert_timing(result.timing, engine="numpy", ncells=CELLS, ngj=NGJ, connected=True, repeats=2)
    assert result.workload["kernel"] == "io-ehh" and result.workload["size"] == CELLS
    assert result.workload["connected"] is True and result.workload["side"] == 4
    assert result.workload["seed"] == STUDY_SEED == 42  # the study's network by default
    assert "grid index" in result.workload["cell_numbering"]
    expected = reference_workload().annotations["position"]
    assert result.cell_annotations["position"] == expected[:5].tolist()
    assert files_under(tmp_path) == {"run.json"}  # the atomic write left no .partial file


def test_unconnected_run_has_no_positions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    cli_ok(capsys, *run_argv("--unconnected", "--probe-cells", "3", "--out", str(out), cells="700"))
    result = load_run(out)  # 700 is no cube: fine without gap junctions
    assert_traces(result, 3)
    assert_timing(result.timing, engine="numpy", ncells=700, ngj=0, connected=False, repeats=1)
    assert result.workload["connected"] is False
    assert result.cell_annotations == {}


def test_saved_workload_reproduces_the_run_bit_for_bit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    first, second, saved = tmp_path / "first.json", tmp_path / "second.json", tmp_path / "w.npz"
    cli_ok(capsys, *run_argv("--save-workload", str(saved), "--out", str(first)))
    assert saved.read_bytes()[:2] == b"PK"  # an .npz archive
    # Without --cells: the size comes from the file (the default would be 729 cells).
    cli_ok(capsys, *run_argv("--workload", str(saved), "--out", str(second), cells=None))
    a, b = load_run(first), load_run(second)
    assert_traces(a, CELLS)
    assert b.traces == a.traces  # exact float equality, every sample of every cell
    assert b.spikes == a.spikes
    assert b.workload == a.workload and b.timing.ngj == a.timing.ngj == NGJ
    positions = a.cell_annotations["position"]
    assert b.cell_annotations == a.cell_annotations
    assert positions == reference_workload().annotations["position"].tolist()
    assert sorted(positions) == list(range(CELLS))  # a permutation of the grid
    assert files_under(tmp_path) == {"first.json", "second.json", "w.npz"}


def test_numpy_and_jax_engines_agree(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pytest.importorskip("jax")
    traces = {}
    for engine in ("numpy", "jax"):
        out = tmp_path / f"{engine}.json"
        cli_ok(capsys, *run_argv("--out", str(out), engine=engine))
        result = load_run(out)
        assert_timing(result.timing, engine=engine, ncells=CELLS, ngj=NGJ, connected=True, repeats=1)
        traces[engine] = assert_traces(result, CELLS)
    np.testing.assert_allclose(traces["jax"], traces["numpy"], rtol=0, atol=ENGINE_ATOL_MV)


# ------------------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Malformed workload files: random-looking bytes, and a real workload file cut in half."""
    folder = tmp_path_factory.mktemp("bad-inputs")
    (folder / "garbage.npz").write_bytes(bytes(range(256)) * 4)
    whole = reference_workload().save(folder / "whole.npz").read_bytes()
    (folder / "truncated.npz").write_bytes(whole[: len(whole) // 2])
    return folder


BAD_INPUT = [
    pytest.param(
        run_argv(kernel="io-ehx"), EXIT_USAGE, ["unknown kernel 'io-ehx'; choose from:", "io-ehh"], id="kernel"
    ),
    pytest.param(run_argv(device="cpux"), EXIT_USAGE, ["unknown device 'cpux'; choose from:", "cpu"], id="device"),
    pytest.param(run_argv(engine="nump"), EXIT_USAGE, ["unknown engine 'nump'; choose from:", "numpy"], id="engine"),
    pytest.param(
        run_argv(cells="700"),
        EXIT_USAGE,
        ["700 must be a perfect cube", "nearest valid sizes: 512 (8^3) or 729 (9^3)"],
        id="not-a-cube",
    ),
    pytest.param(
        run_argv(ms="1.5"), EXIT_USAGE, ["--ms must be a positive multiple of the sample interval 1 ms"], id="ms"
    ),
    pytest.param(run_argv("--repeats", "0"), EXIT_USAGE, ["'--repeats': must be an integer from 1 to"], id="repeats"),
    pytest.param(
        run_argv("--workload", "{bad}/garbage.npz", cells=None),
        EXIT_USAGE,
        ["garbage.npz: not a hwbench workload file"],
        id="garbage-workload",
    ),
    pytest.param(
        run_argv("--workload", "{bad}/truncated.npz", cells=None),
        EXIT_USAGE,
        ["truncated.npz: not a hwbench workload file"],
        id="truncated-workload",
    ),
    pytest.param(
        run_argv("--unconnected", cells="1000000000"),
        EXIT_UNAVAILABLE,  # the memory guard (runner.check_memory) raises UnavailableError
        ["io-ehh with 1,000,000,000 cells needs about", "GiB available"],
        id="memory-guard",
    ),
    pytest.param(
        bench_argv("--connected-only", "--unconnected-only"),
        EXIT_USAGE,
        ["--connected-only and --unconnected-only exclude each other"],
        id="bench-only-flags",
    ),
]


@pytest.mark.parametrize(("argv", "code", "fragments"), BAD_INPUT)
def test_bad_input_fails_cleanly(
    argv: list[str], code: int, fragments: list[str], bad_files: Path, tmp_path: Path
) -> None:
    argv = [a.format(bad=bad_files) for a in argv]
    proc = hwbench(*argv, "--out", str(tmp_path / "out"), cwd=tmp_path)
    message = assert_clean_failure(proc, code, *fragments)
    if code == EXIT_UNAVAILABLE:
        assert re.search(r"needs about \d+(\.\d+)? GiB", message), message  # the estimate is stated
    assert files_under(tmp_path) == set(), "a failed command must leave no output, not even a partial one"


@pytest.mark.parametrize("options", [{"engine": "nump"}, {"ms": "1.5"}], ids=["engine", "ms"])
def test_failed_run_leaves_no_saved_workload(options: dict[str, str], tmp_path: Path) -> None:
    proc = hwbench(*run_argv("--save-workload", "w.npz", "--out", "run.json", **options), cwd=tmp_path)
    assert_clean_failure(proc, EXIT_USAGE)
    assert files_under(tmp_path) == set()


def test_save_workload_into_a_new_folder_is_no_internal_error(tmp_path: Path) -> None:
    proc = hwbench(*run_argv("--save-workload", "new/w.npz"), cwd=tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, EXIT_USAGE), proc.stderr
    if proc.returncode == 0:
        assert Workload.load(tmp_path / "new" / "w.npz").size == CELLS


# ------------------------------------------------------------------------------------------- bench
def test_bench_writes_consistent_timings_and_a_plot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "bench"
    cli_ok(capsys, *bench_argv("--out", str(out)))
    result = BenchResult.model_validate_json((out / "bench.json").read_text())
    assert result.schema_ == "hwbench.bench/1"
    assert result.skipped == []
    assert result.protocol["sizes"] == [CELLS] and result.protocol["repeats"] == 2
    assert result.protocol["simulated_ms"] == MS and result.protocol["steps_per_call"] == STEPS_PER_SAMPLE
    assert result.protocol["seed"] == STUDY_SEED  # the study's network by default
    by_connectivity = {t.connected: t for t in result.timings}
    assert len(result.timings) == 2 and set(by_connectivity) == {False, True}
    for connected, timing in by_connectivity.items():
        ngj = NGJ if connected else 0
        assert_timing(timing, engine="numpy", ncells=CELLS, ngj=ngj, connected=connected, repeats=2)
        assert_memory(timing)
    assert result.protocol["devices"] == ["cpu"]
    png = (out / "bench.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000
    assert files_under(out) == {"bench.json", "bench.png"}


@pytest.mark.parametrize(
    ("extra", "engine", "fragment"),
    [((), "nump", "unknown engine 'nump'"), (("--mode", "fp16"), "numpy", "unknown mode")],
    ids=["engine", "mode"],
)
def test_bench_rejects_unknown_engine_and_mode(
    extra: tuple[str, ...], engine: str, fragment: str, tmp_path: Path
) -> None:
    proc = hwbench(*bench_argv(*extra, "--out", "bench", engine=engine), cwd=tmp_path)
    assert_clean_failure(proc, EXIT_USAGE, fragment)
    assert files_under(tmp_path) == set()


def test_bench_refuses_a_bad_size_before_running_the_others(tmp_path: Path) -> None:
    """A connected size that is no cube fails at once: had bench first run the 216,000-cell (60^3)
    unconnected network for 1 s of biology (minutes with numpy), this would hit the timeout."""
    argv = ["bench", "--kernel", "io-ehh", "--device", "cpu", "--engine", "numpy", "--cells", "216000,700"]
    proc = hwbench(*argv, "--ms", "1000", "--repeats", "1", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert_clean_failure(proc, EXIT_USAGE, "connected io-ehh size 700", "512 (8^3) or 729 (9^3)")
    assert files_under(tmp_path) == set()


def test_emulated_bench_says_whose_times_they_are_and_quotes_the_chip(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``bench --device groq`` times this host's emulation of the GroqChip: the table has the execution
    column, says so in words, and sets the study's own figure for the same configuration beside it."""
    out = tmp_path / "bench"
    argv = ["bench", "--device", "groq", "--cells", str(CELLS), "--ms", "1", "--repeats", "1", "--connected-only"]
    assert main([*argv, "--no-store", "--out", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "exec" in text and "emul." in text
    assert "this host's time to emulate the chip, not the chip's own time" in text
    assert "published for the real groq, 64 cells connected: 3.7 times the A100's speed" in text
    [timing] = BenchResult.model_validate_json((out / "bench.json").read_text()).timings
    assert timing.execution == "emulated"
    [published] = timing.published
    assert published.figure == 3.7 and "Neurocomputing (2024)" in published.source and "VI-B2" in published.source


def test_real_run_has_no_emulation_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["run", "--device", "cpu", "--cells", str(CELLS), "--ms", "1", "--no-store"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "exec" in text and "real" in text and "not the chip's own time" not in text and "published for" not in text


def test_bench_refuses_every_size_that_does_not_fit_before_running_any(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The study's grid on a host with 2 GiB available: exit 4 at once, each size that does not fit
    named with its estimate (the kernel's plus its traces'), none that fits named, nothing written."""
    from hwbench.core import host as host_facts
    from hwbench.core.bench import PUBLISHED_EDGES
    from hwbench.core.runner import trace_bytes

    monkeypatch.setattr(host_facts, "available_memory_bytes", lambda: 2 * 2**30)
    out = tmp_path / "bench"
    code = main(["bench", "--full", "--engine", "numpy", "--ms", "1", "--repeats", "1", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == EXIT_UNAVAILABLE, err
    assert "Traceback" not in err and err.count("error: ") == 1
    kernel = host.load_registry(entry_point_plugins=False, env={}).kernel("io-ehh")
    refused = []
    for n in PUBLISHED_EDGES:
        for connected in (False, True):
            need = host_memory_estimate(kernel, n**3, connected) + trace_bytes(n**3, 1)
            named = f"{n**3:,} cells {'connected' if connected else 'unconnected'} need about {need / 2**30:.3g} GiB"
            assert (named in err) == (need > 0.8 * 2 * 2**30), (named, err)
            refused += [n] if need > 0.8 * 2 * 2**30 else []
    assert refused and min(refused) > 4  # some sizes fit, some do not: the grid is refused as a whole
    assert "nothing was run" in err and "2 GiB available" in err
    assert not out.exists()


def test_bench_draws_several_devices_in_one_figure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``-d cpu -d groq``: one result and one figure, each timing with its device, the emulated one labelled."""
    pytest.importorskip("jax")
    out = tmp_path / "bench"
    argv = ["bench", "-d", "cpu", "-d", "groq", "--cells", str(CELLS), "--ms", "1", "--repeats", "1"]
    cli_ok(capsys, *argv, "--connected-only", "--out", str(out))
    result = BenchResult.model_validate_json((out / "bench.json").read_text())
    assert result.protocol["devices"] == ["cpu", "groq"] and result.protocol["device"] == "cpu, groq"
    assert [(t.device, t.execution, t.connected) for t in result.timings] == [
        ("cpu", "real", True),
        ("groq", "emulated", True),
    ]
    for timing in result.timings:
        assert timing.rtf is not None and timing.rtf > 0 and timing.setup_s > 0
        assert_memory(timing)
    assert (out / "bench.png").read_bytes().startswith(PNG_SIGNATURE)
