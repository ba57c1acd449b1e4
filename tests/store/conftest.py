"""Synthetic result documents (real schemas, known timing samples) and a fresh store per test."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hwbench.store.db import Store
from hwbench.store.environment import capture
from hwbench.store.location import resolve_location


def timing(
    samples: list[float], *, ncells: int = 729, device: str = "cpu", mode: str = "fp32", execution: str = "real"
) -> dict[str, Any]:
    return {
        "kernel": "io-ehh",
        "device": device,
        "mode": mode,
        "execution": execution,
        "engine": "jax",
        "dtype": "float32",
        "ncells": ncells,
        "ngj": 10 * ncells,
        "connected": True,
        "setup_s": 0.5,
        "run_s": min(samples),
        "run_s_all": samples,
        "simulated_ms": 100.0,
        "steps": 4000,
        "us_per_step": min(samples) / 4000 * 1e6,
        "rtf": min(samples) / 0.1,
        "cell_steps_per_s": ncells * 4000 / min(samples),
    }


def bench_doc(samples: list[float], created: str = "2026-01-01T00:00:00+00:00", **kw: Any) -> dict[str, Any]:
    from hwbench.core.results import BenchResult, Provenance, Timing

    result = BenchResult(
        provenance=Provenance(created=created),
        protocol={"kernel": "io-ehh", "device": kw.get("device", "cpu"), "mode": None, "seed": 0, "repeats": 5},
        timings=[Timing(**timing(samples, **kw))],
    )
    return result.model_dump(mode="json", by_alias=True)


@pytest.fixture
def store_url(tmp_path, monkeypatch) -> str:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    monkeypatch.setenv("HWBENCH_STORE", url)
    return url


@pytest.fixture
def store(store_url) -> Store:
    return Store(resolve_location(store_url))


@pytest.fixture(scope="session")
def environment():
    return capture()


_WRITER = textwrap.dedent(
    """
    import sys
    from hwbench.store.db import Store
    from hwbench.store.environment import capture
    from hwbench.store.location import resolve_location
    from tests.store.conftest import bench_doc
    url, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()  # start together
    store, env = Store(resolve_location(url)), capture()
    for i in range(n):
        store.record(bench_doc([1.0 + worker, 1.0 + i]), env, (f"w{worker}",))
    """
)


def write_concurrently(url: str, workers: list[int], per_worker: int) -> None:
    """One process per worker number, released together, each recording ``per_worker`` results
    tagged ``w<worker>`` into the store at ``url``; every process must succeed."""
    root = Path(__file__).parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, str(w), str(per_worker)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in workers
    ]
    for p in procs:
        assert p.stdout.readline() == "ready\n"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
