"""``hwbench sweep`` on real Dask clusters: a 2-worker LocalCluster, a scheduler and worker started
as separate processes on localhost, resume, a worker killed mid-cell, and Ctrl-C.

Every cell is a real quick audit of the io-ehh stress test (a few seconds each), so each test
keeps to one or two cells.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hwbench.accuracy.verdict import Verdict
from hwbench.core.ops import OpClass
from hwbench.stress.sensitivity import SweepResult
from hwbench.stress.sweep import Tally, dask_client, run_sweep
from hwbench.stress.sweep_cell import CellSettings
from hwbench.stress.sweep_ledger import JsonlLedger
from hwbench.stress.sweep_spec import Cell

QUICK = CellSettings(kernel="io-ehh", protocols=("stress",), quick=True)


def hwbench(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hwbench.cli.main", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_local_cluster_two_workers_store_and_resume(tmp_path: Path):
    store = f"sqlite:///{tmp_path / 'results.sqlite'}"
    proc = hwbench(
        "sweep", "--dir", str(tmp_path), "--id", "s1", "--quick", "--grid", "exp:8,20", "--workers", "2",
        "--store", store, "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = SweepResult.model_validate(json.loads(proc.stdout))
    assert result.cluster["kind"] == "local" and result.cluster["workers"] == 2
    assert [c.status for c in result.cells] == ["done", "done"]
    (row,) = result.sensitivity
    # exp at 8 bits: the reduced-precision exp makes 1 - exp(-(V+25)/10) exactly 0 (the study's failure)
    assert row.group == "exp" and row.min_pass_bits == 20 and row.first_fail_bits == 8
    assert "non-finite" in row.first_fail_reason and "exp" in row.first_fail_reason
    assert (tmp_path / "s1" / "sensitivity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ledger = tmp_path / "s1" / "cells.jsonl"
    lines = ledger.read_text().splitlines()
    assert len(lines) == 2

    # every cell is an audit in the results store, tagged with the sweep, its uid hashed from <sweep>:<cell key>
    from hwbench.cli.sweep_store import cell_uid

    listed = hwbench("results", "--store", store, "list", "--tag", "sweep:s1", "--json")
    assert listed.returncode == 0, listed.stderr
    stored = json.loads(listed.stdout)
    assert sorted(r["uid"] for r in stored) == sorted(cell_uid("s1", c.key) for c in result.cells)
    assert {r["kind"] for r in stored} == {"audit"}

    # resume from the store alone: the sweep's own file is gone, nothing runs again
    ledger.unlink()
    again = hwbench("sweep", "--dir", str(tmp_path), "--resume", "s1", "--store", store, "--json")
    assert again.returncode == 0, again.stderr
    assert "0 cells audited (+2 resumed)" in again.stderr
    resumed = SweepResult.model_validate(json.loads(again.stdout))
    assert [c.verdict for c in resumed.cells] == [c.verdict for c in result.cells]

    # resume from the file alone (store off): forget the 20-bit cell; only it runs again
    ledger.write_text("".join(line + "\n" for line in lines if "m20" not in line))
    third = hwbench("sweep", "--dir", str(tmp_path), "--resume", "s1", "--no-store", "--json")
    assert third.returncode == 0, third.stderr
    assert "1 cells audited (+1 resumed), 0 failed" in third.stderr
    assert [c.verdict for c in SweepResult.model_validate(json.loads(third.stdout)).cells] == [
        c.verdict for c in result.cells
    ]
    assert len(ledger.read_text().splitlines()) == 2
    assert hwbench("sweep", "--dir", str(tmp_path), "--id", "s1", "--grid", "exp:8").returncode == 2  # no clobbering


@pytest.fixture
def scheduler(tmp_path: Path):
    """A Dask scheduler and one worker, each its own process, on loopback only."""
    info = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    common = ["--no-dashboard"]
    sched = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--scheduler-file",
            str(info),
            *common,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    procs = [sched]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--host",
                    "127.0.0.1",
                    *common,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        )
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_sweep_on_a_scheduler_started_apart(tmp_path: Path, scheduler: str):
    assert scheduler.startswith("tcp://127.0.0.1:")
    proc = hwbench(
        "sweep",
        "--dir",
        str(tmp_path),
        "--id",
        "remote",
        "--quick",
        "--grid",
        "div:10",
        "--scheduler",
        scheduler,
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = SweepResult.model_validate(json.loads(proc.stdout))
    assert result.cluster["kind"] == "scheduler" and result.cluster["address"] == scheduler
    assert result.cluster["workers"] == 1
    (cell,) = result.cells
    assert cell.status == "done" and cell.verdict is not None
    assert cell.worker.split(":")[-1] != str(os.getpid())


def test_a_killed_worker_loses_only_its_cell_which_is_retried(tmp_path: Path):
    cell = Cell(device="cpu", mode="fp32", ops=(OpClass.EXP,), bits=20)
    ledger = JsonlLedger(tmp_path / "cells.jsonl")
    killed: list[int] = []
    with dask_client(workers=2) as (client, _):
        pids = client.run(os.getpid)  # worker address -> pid

        def monitor(tally: Tally) -> None:
            if killed or tally.running < 1:
                return
            time.sleep(1.0)  # let the audit get going
            busy = [addr for addr, keys in client.processing().items() if keys]
            if busy:
                killed.append(pids[busy[0]])
                os.kill(pids[busy[0]], signal.SIGKILL)

        # the baseline cache off: with the session's cache warm the cell could end before the kill
        uncached = QUICK.model_copy(update={"baseline_cache": False})
        (outcome,) = run_sweep(client, [cell], uncached, ledger, monitor=monitor)
    assert killed, "the test never saw the cell running"
    assert outcome.status == "done" and outcome.verdict is Verdict.PASS
    assert int(outcome.worker.split(":")[-1]) != killed[0]  # finished by another (or restarted) worker
    assert list(ledger.recorded()) == [cell.key()]


def test_ctrl_c_cancels_and_leaves_no_partial_records(tmp_path: Path):
    import psutil

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hwbench.cli.main",
            "sweep",
            "--dir",
            str(tmp_path),
            "--id",
            "c",
            "--quick",
            "--grid",
            "exp:12,14",
            "--workers",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    folder = tmp_path / "c"
    deadline = time.monotonic() + 120
    children: list[psutil.Process] = []
    while time.monotonic() < deadline and not children:  # wait until the cluster's worker is up
        time.sleep(0.5)
        children = [p for p in psutil.Process(proc.pid).children(recursive=True) if "python" in p.name()]
    time.sleep(3.0)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    # hwbench's own last line (multiprocessing's resource tracker, a process of its own that outlives
    # the command by design, may still warn about the cluster's semaphores after it)
    ours = [line for line in err.strip().splitlines() if "resource_tracker" not in line and "warnings.warn" not in line]
    assert ours[-1] in ("error: interrupted", "error: aborted")  # one line, no traceback
    assert "Traceback" not in err
    assert (folder / "spec.json").exists() and not (folder / "sweep.json").exists()
    ledger = JsonlLedger(folder / "cells.jsonl")
    lines = ledger.path.read_text().splitlines() if ledger.path.exists() else []
    assert len(ledger.recorded()) == len(lines) < 2  # whole records only, of finished cells only
    psutil.wait_procs(children, timeout=30)
    assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_unreachable_scheduler_exits_4_and_writes_nothing(tmp_path: Path):
    proc = hwbench("sweep", "--dir", str(tmp_path), "--quick", "--grid", "exp:8", "--scheduler", "tcp://127.0.0.1:1")
    assert proc.returncode == 4, proc.stderr
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("error: cannot connect to the Dask scheduler at tcp://127.0.0.1:1")
    )
    assert not any(tmp_path.iterdir())


def test_every_kernel_sweeps_on_its_own_protocols(tmp_path: Path):
    """A DL primitive sweeps on Dask with its elementwise protocol (the spec names no protocol: the
    kernel's own apply), one report per input distribution in every cell."""
    proc = hwbench(
        "sweep", "--kernel", "gemm", "--device", "tpu-v3", "--grid", "matmul_input:7,10", "--quick",
        "--dir", str(tmp_path), "--id", "g", "--workers", "1", "--no-store", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = SweepResult.model_validate(json.loads(proc.stdout))
    assert result.spec.kernel == "gemm" and result.cluster["kind"] == "local"
    assert [c.status for c in result.cells] == ["done", "done"]
    (row,) = result.sensitivity
    assert row.group == "matmul_input" and set(row.verdicts) == {7, 10}
    assert all({"dl-gemm normal", "dl-gemm uniform-positive"} <= set(c.protocols) for c in result.cells)
    widths = set()
    for line in (tmp_path / "g" / "cells.jsonl").read_text().splitlines():  # every cell's full audit report
        outcome = json.loads(line)
        report = outcome["report"]
        assert report["settings"]["kernel"] == "gemm"
        assert {p["protocol"] for p in report["protocols"]} == {"dl-primitives"}
        (cand,) = [r for r in report["protocols"][0]["runs"] if r["role"] == "candidate"]
        width = cand["profile"].rpartition("matmul_input@m")[2].removesuffix("-nearest-even")
        assert f"matmul_input@m{width}/" in outcome["key"]
        widths.add(int(width))
    assert widths == {7, 10}
    assert set(row.verdicts.values()) == {"PASS"}  # bf16's 7 bits and wider: within the tpu-v3's own bound
    lif = hwbench("sweep", "--kernel", "lif", "--protocol", "stress", "--dir", str(tmp_path), "--no-store")
    assert lif.returncode == 2 and "kernel 'lif' has no stress protocol" in lif.stderr


def test_a_dl_sweep_answers_which_widths_keep_within_the_devices_own_bound(tmp_path: Path):
    """Cells are judged against the tpu-v3's own (bf16) error bound: 3 fraction bits exceed it, 10 do not."""
    proc = hwbench(
        "sweep", "--kernel", "gemm", "--device", "tpu-v3", "--grid", "matmul_input:3,10", "--quick",
        "--dir", str(tmp_path), "--id", "w", "--workers", "1", "--no-store", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = SweepResult.model_validate(json.loads(proc.stdout)).sensitivity
    assert row.verdicts[3] == "FAIL" and row.verdicts[10] == "PASS", row.verdicts
    for line in (tmp_path / "w" / "cells.jsonl").read_text().splitlines():
        report = json.loads(line)["report"]
        for p in report["protocols"]:
            (cand,) = [r for r in p["runs"] if r["role"] == "candidate"]
            assert cand["deviation"]["bound_of"] == "tpu-v3-default"


def test_a_model_sweep_answers_which_matrix_input_width_it_needs(tmp_path: Path):
    """A user's model (the PyTorch MLP of tests/data/models) swept over the TPU's matrix-input width:
    7 fraction bits (bf16) miss the tolerance, 10 meet it; every cell audited the model's file."""
    models = Path(__file__).resolve().parents[1] / "data" / "models"
    proc = hwbench(
        "sweep", "--model", str(models / "mlp.onnx"), "--inputs", str(models / "mlp_inputs.npz"), "--device", "tpu-v3",
        "--grid", "matmul_input:7,10", "--rtol", "0.01", "--atol", "0.001",
        "--dir", str(tmp_path), "--id", "m", "--workers", "1", "--no-store", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = SweepResult.model_validate(json.loads(proc.stdout)).sensitivity
    assert row.verdicts[7] == "FAIL" and row.verdicts[10] == "PASS", row.verdicts
    for line in (tmp_path / "m" / "cells.jsonl").read_text().splitlines():
        report = json.loads(line)["report"]
        assert report["settings"]["kernel"] == "onnx" and report["protocols"][0]["protocol"] == "onnx-model"
        assert report["settings"]["options"]["model"].endswith("mlp.onnx")
