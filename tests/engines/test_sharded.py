"""One io-ehh network over several JAX devices and processes gives the bits of one device.

The device count of XLA's host platform is fixed when JAX starts, so every test here runs hwbench
in a fresh process with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``: the rest of the
suite keeps its one CPU device. ``_sharded_bits.py`` compares state, probes and spikes of every
configuration (native fp32 and fp64, emulated devices whose numerics fuse into the halo exchange
or key random bits by position, a one-hot contamination spreading NaN, an unconnected network)
unsharded and over 1, 2 and 4 devices. Two processes on JAX's distributed runtime (127.0.0.1, a
free port, one CPU device each) give the traces of one process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jax")

from hwbench.core.distributed import Cluster, parse_coordinator
from hwbench.core.errors import UsageError

HERE = Path(__file__).resolve().parent
HWBENCH = [sys.executable, "-m", "hwbench.cli.main"]


def env_with_devices(n: int | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if n is not None:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    return env


def run(argv: list[str], devices: int | None, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env_with_devices(devices), cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("group", ["native", "emulated", "unconnected", "devices"])
def test_a_sharded_run_is_the_unsharded_run_bit_for_bit(group: str, tmp_path: Path) -> None:
    done = run([sys.executable, str(HERE / "_sharded_bits.py"), group], 4, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    refused = {name for name, found in report.items() if "refused" in found}
    assert refused <= {"ipu:fp16-sr"}, report  # its stochastically rounded gather cannot be fused
    for name in refused:
        assert "only through the fused gather-map-scatter" in report[name]["refused"]
    for name, found in report.items():
        shards = {k: v for k, v in found.items() if k.isdigit()}
        assert name in refused or (shards and all(shards.values())), f"{name}: {found}"
    if group == "native":
        assert set(report["cpu fp32"]) >= {"1", "2", "4"}
        assert report["cpu fp32"]["spikes"] > 0  # per-cell spikes come back in cell order
    if group == "emulated":
        assert report["tensorrt, inf source"]["nonfinite"] > 0  # the contamination crossed the slabs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_processes_give_the_bits_of_one(tmp_path: Path) -> None:
    run_args = [*HWBENCH, "run", "--cells", "1728", "--ms", "3", "--no-store", "--no-energy"]
    cluster = ["--coordinator", f"127.0.0.1:{free_port()}", "--num-processes", "2"]
    workers = [
        subprocess.Popen(
            [*run_args, *cluster, "--process-id", str(i), "--out", f"p{i}.json"],
            env=env_with_devices(None),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in (1, 0)
    ]
    outs = [w.communicate(timeout=600) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [o[1][-2000:] for o in outs]
    single = run([*run_args, "--out", "one.json"], None, tmp_path)
    assert single.returncode == 0, single.stderr[-2000:]
    assert not (tmp_path / "p1.json").exists()  # process 0 writes the result
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "p0.json"))
    assert two["timing"]["shards"] == 2 and "2 shards" in two["timing"]["engine"]
    assert two["traces"] == one["traces"] and two["spikes"] == one["spikes"]


def test_run_bench_and_audit_take_shard(tmp_path: Path) -> None:
    one = run([*HWBENCH, "run", "--cells", "1728", "--ms", "2", "--no-store", "--no-energy", "--json"], 2, tmp_path)
    two = run(
        [*HWBENCH, "run", "--cells", "1728", "--ms", "2", "--no-store", "--no-energy", "--json", "--shard", "2"],
        2,
        tmp_path,
    )
    assert one.returncode == two.returncode == 0, two.stderr[-2000:]
    timing = json.loads(two.stdout)["timing"]
    assert timing["shards"] == 2 and timing["engine"] == "jax (2 shards)"
    bench = [*HWBENCH, "bench", "--cells", "1728", "--connected-only", "--ms", "1", "--repeats", "1", "--no-store"]
    done = run([*bench, "--no-energy", "--json", "--shard", "2", "--out", "b"], 2, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["protocol"]["shards"] == 2 and [t["shards"] for t in result["timings"]] == [2]
    audit = [*HWBENCH, "audit", "-d", "groq", "--quick", "--protocol", "stress", "--no-store", "--json"]
    reports = [run([*audit, *extra], 2, tmp_path) for extra in ([], ["--shard", "2"])]
    assert [r.returncode for r in reports] == [1, 1], reports[1].stderr[-2000:]  # the GroqChip fails it
    candidates = [
        [r for r in json.loads(rep.stdout)["protocols"][0]["runs"] if r["role"] == "candidate"] for rep in reports
    ]
    for unsharded, sharded in zip(*candidates, strict=True):
        assert "2 shards" in sharded["engine"]
        assert sharded["deviation"] == unsharded["deviation"] and sharded["spikes"] == unsharded["spikes"]


def test_distributed_without_a_cluster_is_a_usage_error(tmp_path: Path) -> None:
    done = run([*HWBENCH, "run", "--cells", "64", "--ms", "1", "--no-store", "--distributed"], None, tmp_path, 120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("error:") == 1 and "cannot join the distributed run" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("127.0.0.1:8476", "127.0.0.1", 8476), ("[::1]:1", "::1", 1), ("node-7:65535", "node-7", 65535)],
)
def test_coordinator_addresses(text: str, host: str, port: int) -> None:
    assert parse_coordinator(text) == (host, port)


@pytest.mark.parametrize("text", ["", "host", ":80", "h:0", "h:65536", "h:-1", "h:8o", "[::1]"])
def test_bad_coordinator_addresses(text: str) -> None:
    with pytest.raises(UsageError, match="HOST:PORT"):
        parse_coordinator(text)


def test_a_cluster_takes_all_three_or_none() -> None:
    assert Cluster("h:1", 2, 1).explicit and not Cluster(from_environment=True).explicit
    with pytest.raises(UsageError, match="go together"):
        Cluster(coordinator="h:1")
    with pytest.raises(UsageError, match="go together"):
        Cluster(num_processes=2, process_id=0)
    with pytest.raises(UsageError, match=r"0\.\.1"):
        Cluster("h:1", 2, 2)
    with pytest.raises(UsageError, match="positive"):
        Cluster("h:1", 0, 0)


def test_a_sharded_run_starts_jax_with_the_engines_flags(tmp_path: Path) -> None:
    """The device count is checked before the build, which starts JAX's backend: the engine's XLA
    flags must be set by then, or the step loop runs op by op (several times slower)."""
    code = (
        "from hwbench.core.plugins import get_registry\n"
        "from hwbench.core.runner import build, prepare\n"
        "prep = prepare(get_registry(), kernel='io-ehh', device='cpu', size=1728, shards=2)\n"
        "print(build(prep)[0].small_loop_kernels)\n"
    )
    done = run([sys.executable, "-c", code], 2, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True"
