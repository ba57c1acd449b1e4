"""The audit's baseline cache (docs/audit.md, "Baseline cache").

A cached audit's report equals a fresh one's apart from timings and the from-cache flags; a stale
entry (another hwbench version, engine version, kernel source or seed) is never found; a corrupt or
truncated entry is detected, discarded and recomputed; two processes writing the same entries both
succeed and leave them valid; the size limit evicts the least recently used; ``--no-cache`` neither
reads nor writes. Each test uses a cache folder of its own (``tmp_path``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hwbench
from hwbench.accuracy import baseline_cache
from hwbench.accuracy.audit import AuditSettings, Candidate
from hwbench.accuracy.baseline_cache import BaselineCache
from hwbench.accuracy.report import AuditReport
from hwbench.core.disk_cache import parse_size
from hwbench.core.errors import UsageError
from hwbench.core.plugins import get_registry
from hwbench.core.scenario import Checkpoint, Trace
from hwbench.stress.protocols import standard_auditor

KERNEL = "leaky-ring"  # the toy kernel that declares small versions of both protocols: fast to audit


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "baselines"
    monkeypatch.setenv("HWBENCH_BASELINE_CACHE", str(root))
    monkeypatch.delenv("HWBENCH_BASELINE_CACHE_SIZE", raising=False)
    return root


def audit(seed: int = 7, cache: bool = True, threads: int | None = None) -> AuditReport:
    settings = AuditSettings(kernel=KERNEL, quick=True, seed=seed, cache=cache, threads=threads)
    return standard_auditor(get_registry(), settings).run([Candidate("groq")])


TIMED = ("us_per_step", "rtf", "cell_steps_per_s", "gflops", "events_per_s")


def comparable(report: AuditReport) -> dict[str, Any]:
    """The report without what may differ between a fresh and a cached audit: timings, from-cache flags."""
    data = report.model_dump(mode="json", by_alias=True)
    data.pop("elapsed_s")
    data.pop("provenance")
    for p in data["protocols"]:
        for r in p["runs"]:
            for key in ("setup_s", "run_s", "from_cache"):
                r.pop(key)
            for values in r["metrics"].values():  # the kernel's speed metrics derive from run_s
                for key in TIMED:
                    if isinstance(values, dict):
                        values.pop(key, None)
    return data


def from_cache(report: AuditReport) -> dict[tuple[str, str], bool]:
    return {(p.name, r.label): r.from_cache for p in report.protocols for r in p.runs}


def entries(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def test_a_cached_audit_reports_what_a_fresh_one_does(cache_dir: Path) -> None:
    fresh = audit()
    assert not any(from_cache(fresh).values())
    assert len(entries(cache_dir)) == 8  # reference, gold, two ensemble members; two protocols
    cached = audit()
    flags = from_cache(cached)
    assert flags == {(p, lab): not lab.startswith("groq") for p, lab in flags}, flags
    assert comparable(cached) == comparable(fresh)
    assert comparable(audit(cache=False)) == comparable(fresh)


def test_runs_at_once_report_what_runs_one_after_another_do(cache_dir: Path) -> None:
    """The protocols, their baselines and their candidates run in threads of their own unless
    ``threads`` is 1: the report (protocol and run order included) must not depend on it."""
    one_by_one = audit(cache=False, threads=1)
    at_once = audit(cache=False)
    assert [p.name for p in at_once.protocols] == [p.name for p in one_by_one.protocols] == ["validation", "stress"]
    assert comparable(at_once) == comparable(one_by_one)


def test_a_stale_entry_is_never_used(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    audit()
    assert any(from_cache(audit()).values())
    assert not any(from_cache(audit(seed=8)).values())  # another seed
    monkeypatch.setattr(hwbench, "__version__", "0.0.0-other")
    assert not any(from_cache(audit()).values())  # another hwbench version
    versions = {**baseline_cache.engine_versions(), "jaxlib": "0.0.0-other"}
    monkeypatch.setattr(baseline_cache, "engine_versions", lambda: versions)
    assert not any(from_cache(audit()).values())  # another engine version
    monkeypatch.setattr(baseline_cache, "code_fingerprint", lambda *objects: "changed kernel source")
    assert not any(from_cache(audit()).values())  # a changed kernel
    assert len(entries(cache_dir)) == 5 * 8


def test_a_changed_kernel_source_changes_its_fingerprint(tmp_path: Path) -> None:
    source = tmp_path / "my_kernel.py"

    def fingerprint(body: str) -> str:
        source.write_text(textwrap.dedent(body))
        spec = importlib.util.spec_from_file_location("my_kernel", source)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["my_kernel"] = module
        try:
            spec.loader.exec_module(module)
            return baseline_cache.code_fingerprint(module.K())
        finally:
            del sys.modules["my_kernel"]

    one = fingerprint("class K:\n    def step(self, v):\n        return v * 0.5\n")
    assert fingerprint("class K:\n    def step(self, v):\n        return v * 0.5\n") == one
    assert fingerprint("class K:\n    def step(self, v):\n        return v * 0.25\n") != one


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "bad metadata"])
def test_a_corrupt_entry_is_discarded_and_recomputed(cache_dir: Path, damage: str) -> None:
    fresh = audit()
    victim = entries(cache_dir)[0]
    payload, meta = victim / "payload.npz", victim / "meta.json"
    if damage == "flip a byte":
        data = bytearray(payload.read_bytes())
        data[len(data) // 2] ^= 0x01
        payload.write_bytes(bytes(data))
    elif damage == "truncate":
        payload.write_bytes(payload.read_bytes()[:-100])
    else:
        meta.write_text(meta.read_text()[:-10])
    again = audit()
    assert sum(not f for f in from_cache(again).values()) == 2 + 1  # the two candidates and the damaged run
    assert comparable(again) == comparable(fresh)
    assert all(BaselineCache(cache_dir, 1 << 40).load(e.name) is not None for e in entries(cache_dir))


def test_no_cache_neither_reads_nor_writes(cache_dir: Path) -> None:
    audit(cache=False)
    assert not cache_dir.exists()
    audit()
    stamps = {e: (e / "meta.json").stat().st_mtime_ns for e in entries(cache_dir)}
    report = audit(cache=False)
    assert not any(from_cache(report).values())
    assert {e: (e / "meta.json").stat().st_mtime_ns for e in entries(cache_dir)} == stamps


def test_no_cache_through_the_cli(tmp_path: Path) -> None:
    env = {**os.environ, "HWBENCH_BASELINE_CACHE": str(tmp_path / "c")}
    argv = [sys.executable, "-m", "hwbench.cli.main", "audit", "-k", KERNEL, "-d", "groq", "--quick", "--no-store"]
    off = subprocess.run([*argv, "--no-cache"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert off.returncode == 0, off.stderr
    assert not (tmp_path / "c").exists() and "baseline cache" not in off.stdout
    for _ in range(2):
        on = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert on.returncode == 0, on.stderr
    assert "from the baseline cache (--no-cache reruns them): reference, gold (CPU fp64)" in on.stdout
    bad = {**env, "HWBENCH_BASELINE_CACHE_SIZE": "lots"}
    refused = subprocess.run(argv, env=bad, capture_output=True, text=True, timeout=600, check=False)
    assert refused.returncode == 2 and "HWBENCH_BASELINE_CACHE_SIZE: a size in bytes" in refused.stderr
    assert "Traceback" not in refused.stderr


def trace(seed: int, n: int = 1000) -> Trace:
    rng = np.random.default_rng(seed)
    probes = rng.normal(size=(n, 4)).astype(np.float32)
    state = (rng.normal(size=4), rng.normal(size=4).astype(np.float32))
    return Trace(f"t{seed}", probes, np.full((n, 4), -1, np.int32), {"div": 3}, state)


def test_size_limit_evicts_the_least_recently_used(tmp_path: Path) -> None:
    one = BaselineCache(tmp_path, 1 << 40)
    one.store("a" * 64, {}, trace(0))
    size = sum(f.stat().st_size for f in (tmp_path / ("a" * 64)).iterdir())
    cache = BaselineCache(tmp_path, int(2.5 * size))
    cache.store("b" * 64, {}, trace(1))
    for i, key in enumerate(("a" * 64, "b" * 64)):  # a used first, then b: a is the least recent
        os.utime(tmp_path / key / "meta.json", (1000 + i, 1000 + i))
    assert cache.load("a" * 64) is not None  # reading a makes b the least recently used
    cache.store("c" * 64, {}, trace(2))
    assert [e.name[0] for e in entries(tmp_path)] == ["a", "c"]
    assert BaselineCache(tmp_path, 0).evict() == 2 and entries(tmp_path) == []


WRITER = """
import sys
import numpy as np
from pathlib import Path
from hwbench.accuracy.baseline_cache import BaselineCache
from hwbench.core.scenario import Trace
cache = BaselineCache(Path(sys.argv[1]), 1 << 40)
rng = np.random.default_rng(0)
traces = [Trace(str(k), rng.normal(size=(2000, 64)), None, {}, rng.normal(size=64)) for k in range(20)]
sys.stdin.readline()  # start together
ok = [cache.store(f"{k:064x}", {"k": k}, t) for k, t in enumerate(traces)]
print(all(ok))
"""


def test_concurrent_writers_both_succeed_and_leave_valid_entries(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [p.communicate(timeout=300) for p in procs]
    assert [(p.returncode, out.strip()) for p, (out, _) in zip(procs, results, strict=True)] == [(0, "True")] * 2
    cache = BaselineCache(tmp_path, 1 << 40)
    rng = np.random.default_rng(0)
    for k in range(20):
        expected = rng.normal(size=(2000, 64))
        rng.normal(size=64)
        got = cache.load(f"{k:064x}")
        assert got is not None and np.array_equal(got.probes, expected)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


arrays = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64, np.int32, np.bool_]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
)
states = st.recursive(
    arrays | st.none() | st.integers(), lambda inner: st.tuples(inner, inner) | st.lists(inner, max_size=3)
)


@settings(max_examples=200)
@given(
    probes=hnp.arrays(np.float32, st.tuples(st.integers(0, 6), st.integers(1, 4))),
    state=states,
    spike_dtype=st.sampled_from([None, np.int8, np.int16, np.int32]),
    data=st.data(),
)
def test_a_stored_trace_reads_back_bit_for_bit(
    tmp_path_factory: pytest.TempPathFactory, probes: Any, state: Any, spike_dtype: Any, data: Any
) -> None:
    root = tmp_path_factory.mktemp("rt")
    spikes = None
    if spike_dtype is not None:
        values = st.integers(-1, 40) | st.just(-1)
        spikes = data.draw(hnp.arrays(spike_dtype, probes.shape, elements=values))
    original = Trace("x", probes, spikes, {"a": 1}, state, {"kind": "nan", "cell": 3}, [Checkpoint(2, 0, state)])
    cache = BaselineCache(root, 1 << 30)
    assert cache.store("d" * 64, {}, original)
    got = cache.load("d" * 64)
    assert got is not None

    def same(a: Any, b: Any) -> bool:
        if isinstance(a, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        if a is None or isinstance(a, int):
            return a == b
        return np.asarray(a).dtype == np.asarray(b).dtype and np.asarray(a).tobytes() == np.asarray(b).tobytes()

    assert got.probes.tobytes() == probes.tobytes() and got.probes.shape == probes.shape
    assert same(got.final_state, state) and same(got.checkpoints[0].state, state)
    assert (got.violation, got.counters) == ({"kind": "nan", "cell": 3}, {"a": 1})
    if spikes is None:
        assert got.spikes is None
    else:
        assert got.spikes is not None and got.spikes.dtype == spikes.dtype and got.spikes.shape == spikes.shape
        assert np.array_equal(got.spikes, spikes)


def test_parse_size() -> None:
    assert [parse_size(s) for s in ("2G", "500M", "64k", "1024", "1.5GiB", "0")] == [
        2 << 30,
        500 << 20,
        64 << 10,
        1024,
        3 << 29,
        0,
    ]
    for bad in ("", "-1", "lots", "G"):
        with pytest.raises(ValueError, match="a size in bytes"):
            parse_size(bad)


def test_cache_location_and_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("HWBENCH_BASELINE_CACHE", "HWBENCH_CACHE_DIR", "HWBENCH_BASELINE_CACHE_SIZE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert BaselineCache.from_env() == BaselineCache(tmp_path / "xdg" / "hwbench" / "baselines", 2 << 30)
    monkeypatch.setenv("HWBENCH_CACHE_DIR", str(tmp_path / "hw"))
    assert BaselineCache.from_env() == BaselineCache(tmp_path / "hw" / "baselines", 2 << 30)
    monkeypatch.setenv("HWBENCH_BASELINE_CACHE_SIZE", "10M")
    monkeypatch.setenv("HWBENCH_BASELINE_CACHE", str(tmp_path / "mine"))
    assert BaselineCache.from_env() == BaselineCache(tmp_path / "mine", 10 << 20)
    monkeypatch.setenv("HWBENCH_BASELINE_CACHE", "off")
    assert BaselineCache.from_env() is None
    monkeypatch.setenv("HWBENCH_BASELINE_CACHE", str(tmp_path / "mine"))
    monkeypatch.setenv("HWBENCH_BASELINE_CACHE_SIZE", "many")
    with pytest.raises(UsageError, match="HWBENCH_BASELINE_CACHE_SIZE"):
        BaselineCache.from_env()


def test_an_old_report_without_the_flag_still_loads() -> None:
    report = audit(cache=False)
    data = json.loads(report.model_dump_json(by_alias=True))
    for p in data["protocols"]:
        for r in p["runs"]:
            del r["from_cache"]
    again = AuditReport.model_validate(data)
    assert not any(from_cache(again).values())


def test_a_sweep_cell_with_no_cache_neither_reads_nor_writes(cache_dir: Path) -> None:
    from hwbench.stress.sweep_cell import Cell, CellSettings, run_cell

    settings = CellSettings(kernel=KERNEL, protocols=("validation",), quick=True, share_base_runs=False)
    off = run_cell(Cell(device="groq"), settings.model_copy(update={"baseline_cache": False}))
    assert off.status == "done" and not cache_dir.exists()
    run_cell(Cell(device="groq"), settings)
    on = run_cell(Cell(device="groq"), settings)
    assert on.report is not None and len(entries(cache_dir)) == 4
    flags = {r["label"]: r["from_cache"] for p in on.report["protocols"] for r in p["runs"]}
    assert flags == {"reference": True, "gold (CPU fp64)": True, "ensemble: reversed order": True,
                     "ensemble: +1 ulp V0": True, "groq [default]": False}  # fmt: skip


def test_every_cache_sits_in_hwbench_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The JAX compilation cache, the program cache beside it and the baseline cache share one
    folder, found the same way (the JAX cache once ignored ``XDG_CACHE_HOME``)."""
    from hwbench.core.engines import jax_cache
    from hwbench.core.engines.program_cache import default_root as program_root

    for var in ("HWBENCH_BASELINE_CACHE", "HWBENCH_CACHE_DIR", "HWBENCH_PROGRAM_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for base in (tmp_path / "home" / ".cache" / "hwbench", tmp_path / "xdg" / "hwbench", tmp_path / "hw"):
        if base.parent.name == "xdg":
            monkeypatch.setenv("XDG_CACHE_HOME", str(base.parent))
        if base.name == "hw":
            monkeypatch.setenv("HWBENCH_CACHE_DIR", str(base))
        assert jax_cache.cache_dir() == base / "jax"
        assert program_root(str(jax_cache.cache_dir())) == base / "programs"
        assert BaselineCache.from_env() == BaselineCache(base / "baselines", 2 << 30)
