"""Output files under stress: Ctrl-C at random points, two writers, stale plots, closed stdout.

* SIGINT at random points of ``run``, ``bench`` and ``audit --quick`` (real processes): exit 130
  and the folder exactly as before (no ``.partial``, no lock, no half set, earlier results intact),
  or, if the command had already finished, exit 0 and a complete set of outputs;
* two commands writing one ``--out`` folder: the second is refused at once (exit 4), the first
  still owns it;
* a new, smaller audit replaces the earlier one's plots instead of sitting beside them;
* only regular files are replaced, symlinks are written through, nothing is written through a FIFO;
* a closed stdout is not an error; unknown plugin names in HWBENCH_LOAD_PLUGINS are warned about.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hwbench.core import plugins as host
from hwbench.core.device import Device, DeviceSpec, ProbeResult
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.files import LOCK_NAME, OutputDir, OutputFiles, write_atomic
from hwbench.core.hookspecs import hookimpl
from hwbench.library.audit import AUDIT_OUTPUTS
from hwbench.testing.badinput import run_cli, snapshot

# The CLI in a fresh interpreter that says "ready" once imported, so a signal lands in the command
# itself (an interrupt during interpreter start-up is Python's, not hwbench's, to report).
READY = "import sys; import hwbench.cli.main as m; print('ready', file=sys.stderr, flush=True); sys.exit(m.main())"
RNG = random.Random(14)  # the "random points": fixed seed, so a failure can be replayed
INTERRUPTS = [
    (
        "run",
        [
            "run",
            "--engine",
            "numpy",
            "--cells",
            "64",
            "--ms",
            "400",
            "--out",
            "o/run.json",
            "--save-workload",
            "o/w.npz",
        ],
    ),
    ("bench", ["bench", "--engine", "numpy", "--cells", "64,512", "--ms", "40", "--repeats", "2", "--out", "o"]),
    ("audit", ["audit", "-d", "cpu:fp32", "--quick", "--protocol", "validation", "--out", "o"]),
]
CASES = [(name, argv, round(RNG.uniform(0.05, 3.0), 2)) for name, argv in INTERRUPTS for _ in range(2)]


def start(argv: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen(
        [sys.executable, "-c", READY, *argv],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stderr.readline().strip() == "ready"
    return proc


def earlier_results(folder: Path) -> None:
    """What an earlier full run left in ``folder``: must survive an interrupted new one untouched."""
    folder.mkdir()
    for name in ("report.json", "bench.json", "stress_box.png", "validation_box.png", "notes.txt"):
        (folder / name).write_text(f"earlier {name}\n")


@pytest.mark.parametrize(("name", "argv", "delay"), CASES, ids=[f"{n}-{d}s" for n, _, d in CASES])
def test_sigint_at_a_random_point_leaves_nothing_behind(name: str, argv: list[str], delay: float, tmp_path: Path):
    if name != "run":
        earlier_results(tmp_path / "o")
    before = snapshot(tmp_path)
    proc = start(argv, tmp_path)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    if proc.returncode == 130:
        assert err.strip().splitlines()[-1] == "error: interrupted"
        assert snapshot(tmp_path) == before, "an interrupted command must leave the folder as it was"
        return
    assert proc.returncode == 0, err  # it finished before the signal: then its outputs are complete
    names = {p.name for p in (tmp_path / "o").iterdir()}
    assert not [n for n in names if n.endswith(".partial") or n == LOCK_NAME], names
    expected = {"run": {"run.json", "w.npz"}, "bench": {"bench.json", "bench.png"}}.get(name, {"report.json"})
    assert expected <= names
    for n in expected & {"run.json", "bench.json", "report.json"}:  # what it wrote (others are the earlier run's)
        json.loads((tmp_path / "o" / n).read_text())


def test_a_second_writer_of_one_out_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    proc = start(["audit", "-d", "cpu:fp32", "--quick", "--protocol", "validation", "--out", "o"], tmp_path)
    try:
        deadline = time.monotonic() + 60
        lock = tmp_path / "o" / LOCK_NAME
        while not (lock.exists() and "pid" in lock.read_text()):  # created, then locked, then signed
            assert time.monotonic() < deadline and proc.poll() is None, "the first audit never took the lock"
            time.sleep(0.05)
        monkeypatch.chdir(tmp_path)
        second = run_cli(["bench", "--engine", "numpy", "--cells", "64", "--ms", "2", "--repeats", "1", "--out", "o"])
        assert second.code == 4, second.stderr
        assert "o is being written by another hwbench audit (pid " in second.error_lines[0]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
    assert proc.returncode in (0, 130)
    assert (tmp_path / "o").exists() == (proc.returncode == 0)  # a folder it created goes with it
    host.reset_registry()


def test_a_new_audit_replaces_the_earlier_plots(tmp_path: Path) -> None:
    out = tmp_path / "o"
    earlier_results(out)
    with OutputDir(out, AUDIT_OUTPUTS, "audit") as folder:  # what a --protocol validation audit writes
        folder.write_text("report.json", "new report\n")
        folder.write_text("validation_box.png", "new box\n")
        folder.write_text("validation_traces.png", "new traces\n")
        assert (out / LOCK_NAME).exists()
    names = sorted(p.name for p in out.iterdir())
    assert names == ["bench.json", "notes.txt", "report.json", "validation_box.png", "validation_traces.png"]
    assert (out / "report.json").read_text() == "new report\n"  # stress_box.png (stale) is gone


def test_a_failed_set_publishes_nothing_and_removes_the_folders_it_made(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), OutputFiles() as files:
        files.write_text(tmp_path / "a" / "b" / "one.json", "1")
        files.write_text(tmp_path / "two.json", "2")
        raise RuntimeError("the run failed after writing")
    assert list(tmp_path.iterdir()) == []


def test_only_regular_files_are_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    with pytest.raises(UsageError, match="not a regular file"), OutputFiles() as files:
        files.write_text(tmp_path / "late.json", "x")
        os.mkfifo(tmp_path / "late.json")  # appears between the check and the rename
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        write_atomic(fifo, lambda fh: fh.write(b"never through a FIFO"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "late.json"]
    assert all(p.is_fifo() for p in tmp_path.iterdir())


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    write_atomic(tmp_path / "link.json", lambda fh: fh.write(b"new"))
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_a_held_lock_is_refused_and_left_alone(tmp_path: Path) -> None:
    with OutputDir(tmp_path / "o", ("x",), "bench"):
        with pytest.raises(UnavailableError, match=rf"being written by another hwbench bench \(pid {os.getpid()}\)"):
            OutputDir(tmp_path / "o", ("x",), "test").__enter__()
        assert (tmp_path / "o" / LOCK_NAME).exists()
    assert list((tmp_path / "o").iterdir()) == []  # the lock goes with its holder


@pytest.mark.parametrize("argv", [["devices", "--json"], ["devices"], ["--help"], ["schema", "run"]])
def test_a_closed_stdout_is_not_an_error(argv: list[str], tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before hwbench writes: `hwbench ... | head -c0`
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", *argv], stdout=write, stderr=subprocess.PIPE, text=True, env=env
    )
    os.close(write)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_unknown_plugin_names_are_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWBENCH_LOAD_PLUGINS", "no-such-plugin")
    monkeypatch.setenv("HWBENCH_DISABLE_PLUGINS", "builtin-cpux")
    host.reset_registry()
    try:
        outcome = run_cli(["kernels", "--json"])
    finally:
        host.reset_registry()
    assert outcome.code == 0
    warnings = [line for line in outcome.stderr.splitlines() if line.startswith("warning: ")]
    assert any("HWBENCH_LOAD_PLUGINS names unknown plugin 'no-such-plugin'; installed plugins:" in w for w in warnings)
    assert any("HWBENCH_DISABLE_PLUGINS names unknown plugin 'builtin-cpux'; known plugins: " in w for w in warnings)


class _ExitingDevice(Device):
    """A vendor SDK that calls exit() when it finds no chip: a plugin bug, never exit 1 for the user."""

    spec = DeviceSpec(name="exits", vendor="Example", model="SDK that exits", kind="other")
    modes = ("default",)

    def probe(self) -> ProbeResult:
        sys.exit(1)

    def executor(self, kernel, workload, **options):  # type: ignore[no-untyped-def]
        raise NotImplementedError


class _ExitingPlugin:
    @hookimpl
    def hwbench_devices(self) -> list[Device]:
        return [_ExitingDevice()]


def test_a_plugin_calling_exit_inside_a_command_is_exit_3(register_plugin) -> None:
    register_plugin(_ExitingPlugin(), name="exits")
    outcome = run_cli(["run", "--device", "exits", "--cells", "64", "--ms", "1"])
    assert outcome.code == 3, outcome.stderr
    assert outcome.error_lines == ["error: a plugin or library ended the command with exit(1)"]
