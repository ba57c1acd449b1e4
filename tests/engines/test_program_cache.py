"""The JAX engine's program cache (docs/audit.md, "Program cache").

A program read from the cache runs bit for bit as the one traced and compiled afresh, and without
tracing; anything the trace depends on (steps per sample, the profile, a workload parameter, the
kernel's or hwbench's source, hwbench's version) gives another entry; ops that do not say what
they trace to are never cached; a damaged entry is discarded and the program built again; the
size limit evicts; an audit with cached programs reports what one without does. The suite runs
with the cache off (tests/conftest.py); these tests turn it on in a folder of their own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hwbench
from hwbench.core import disk_cache
from hwbench.core.device import RunRequest
from hwbench.core.engines import program_cache
from hwbench.core.engines.jax_engine import JaxEngine, JaxExecutor, JaxOps
from hwbench.core.engines.program_cache import ProgramCache, trace_key_of
from hwbench.core.errors import UsageError
from hwbench.core.kernel import Workload
from hwbench.core.plugins import get_registry

KERNEL = "leaky-ring"


@pytest.fixture
def programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from hwbench.core.engines.jax_cache import enable_compilation_cache

    assert enable_compilation_cache()  # (as audits, runs and benches do): the program cache goes with it
    root = tmp_path / "programs"
    monkeypatch.setenv("HWBENCH_PROGRAM_CACHE", str(root))
    monkeypatch.delenv("HWBENCH_PROGRAM_CACHE_SIZE", raising=False)
    return root


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per program traced (and compiled) rather than read from the cache."""
    calls: list[bool] = []
    real = JaxExecutor._lower

    def counting(self: JaxExecutor, state0: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("finite_state", False))
        return real(self, state0, **kwargs)

    monkeypatch.setattr(JaxExecutor, "_lower", counting)
    return calls


def workload(seed: int = 3, **overrides: Any) -> Workload:
    return get_registry().kernel(KERNEL).make_workload(16, connected=True, seed=seed, **overrides)


def groq(work: Workload, *, sample_every: int | None = None, overrides: dict[str, Any] | None = None) -> Any:
    """An emulated GroqChip executor (saturating profile: a finite-state and a general program)."""
    from hwbench.core.device import numerics_with_overrides

    device = get_registry().device("groq")
    profile = numerics_with_overrides(device, device.default_mode, overrides) if overrides else None
    kernel = get_registry().kernel(KERNEL)
    return device.executor(RunRequest(kernel=kernel, workload=work, profile=profile, sample_every=sample_every))


def outputs(executor: Any, work: Workload) -> list[np.ndarray]:
    """Everything a run returns, finite start (the finite-state program) and NaN start (the general one)."""
    kernel = get_registry().kernel(KERNEL)
    inputs = {k: np.full_like(v, 0.3) for k, v in kernel.default_inputs(work).items()}
    finite = executor.run(work.state0, inputs, 7)
    bad = np.array(work.state0, dtype=np.float64, copy=True)
    bad[0, 0] = np.nan
    general = executor.run(bad, inputs, 3)
    arrays = [finite.probes, finite.spikes, finite.state, general.probes, general.spikes, general.state]
    counts = [np.asarray(sorted({**finite.counters, **general.counters}.items()), dtype=object)]
    return [np.asarray(a) for a in arrays] + counts


def same_bits(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


def entries(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def test_a_cached_program_runs_bit_for_bit_without_tracing(programs: Path, traced: list[bool]) -> None:
    work = workload()
    first = groq(work)
    assert first.cached_programs == 0 and traced == [True]
    expected = outputs(first, work)  # (the NaN start compiles the general program too)
    assert len(traced) == 2 and len(entries(programs)) == 2
    again = groq(work)
    assert again.cached_programs == 1 and len(traced) == 2  # the finite-state program: not traced
    assert same_bits(outputs(again, work), expected)
    assert again.cached_programs == 2 and len(traced) == 2  # the general one too, at its first use
    assert again.small_loop_kernels == first.small_loop_kernels


def test_the_program_cache_off_traces_every_build(
    programs: Path, traced: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = workload()
    expected = outputs(groq(work), work)
    monkeypatch.setenv("HWBENCH_PROGRAM_CACHE", "off")
    assert ProgramCache.from_env() is None
    off = groq(work)
    assert off.cached_programs == 0
    assert same_bits(outputs(off, work), expected)  # the traced program computes what the cached one did
    assert len(traced) == 4


def test_a_plain_jax_build_is_cached_too(programs: Path, traced: list[bool]) -> None:
    kernel, work = get_registry().kernel(KERNEL), workload()
    build = JaxEngine().build(kernel, work, dtype="float32")
    assert build.cached_programs == 0
    again = JaxEngine().build(kernel, work, dtype="float32")
    assert again.cached_programs == 1 and len(traced) == 1
    inputs = kernel.default_inputs(work)
    assert same_bits([np.asarray(build.run(work.state0, inputs, 5).probes)],
                     [np.asarray(again.run(work.state0, inputs, 5).probes)])  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [
        "sample_every",
        "profile",
        "workload parameter",
        "seed",
        "kernel source",
        "hwbench source",
        "hwbench version",
        "FMA route",
    ],
)
def test_anything_the_trace_depends_on_gives_another_entry(
    programs: Path, traced: list[bool], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    groq(workload())
    assert len(entries(programs)) == 1
    work, kwargs = workload(), {}
    if change == "sample_every":
        kwargs = {"sample_every": 1}
    elif change == "profile":
        kwargs = {"overrides": {"reduced_mantissa_bits": 12}}
    elif change == "workload parameter":
        work = workload(g=0.123)
    elif change == "seed":
        work = workload(seed=4)
    elif change == "kernel source":
        monkeypatch.setattr(disk_cache, "_class_fingerprint", lambda classes: "changed source")
    elif change == "hwbench source":
        monkeypatch.setattr(program_cache, "package_fingerprint", lambda package: "changed source")
    elif change == "FMA route":  # HWBENCH_FMA=binary64 traces the FMA another way
        monkeypatch.setenv("HWBENCH_FMA", "binary64")
    else:
        monkeypatch.setattr(hwbench, "__version__", "0.0.0-other")
    assert groq(work, **kwargs).cached_programs == 0
    assert len(entries(programs)) == 2


def test_ops_without_a_trace_key_of_their_own_are_never_cached(programs: Path, traced: list[bool]) -> None:
    class MyOps(JaxOps):  # may trace differently from JaxOps: the key could not tell
        pass

    assert trace_key_of(JaxOps()) is not None
    assert trace_key_of(MyOps()) is None
    kernel, work = get_registry().kernel(KERNEL), workload()
    for _ in range(2):
        assert JaxEngine().build(kernel, work, ops_wrapper=lambda raw: MyOps(raw.dtype)).cached_programs == 0
    assert len(traced) == 2 and entries(programs) == []


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "bad metadata"])
def test_a_damaged_entry_is_discarded_and_the_program_built_again(
    programs: Path, traced: list[bool], damage: str
) -> None:
    work = workload()
    expected = outputs(groq(work), work)
    victim = entries(programs)[0]
    payload, meta = victim / "program.bin", victim / "meta.json"
    if damage == "flip a byte":
        data = bytearray(payload.read_bytes())
        data[len(data) // 2] ^= 0xFF
        payload.write_bytes(bytes(data))
    elif damage == "truncate":
        payload.write_bytes(payload.read_bytes()[:100])
    else:
        meta.write_text("{not json")
    rebuilt = groq(work)
    assert same_bits(outputs(rebuilt, work), expected)
    assert rebuilt.cached_programs == 1  # the undamaged entry was used, the damaged one traced again
    assert len(entries(programs)) == 2  # ... and kept anew


def test_the_size_limit_evicts_the_least_recently_used(programs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    groq(workload(seed=1))
    one = entries(programs)
    size = sum(f.stat().st_size for f in one[0].iterdir())
    monkeypatch.setenv("HWBENCH_PROGRAM_CACHE_SIZE", str(int(size * 1.5)))
    groq(workload(seed=2))
    assert entries(programs) != one and len(entries(programs)) == 1


def test_a_bad_size_limit_is_a_usage_error(programs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWBENCH_PROGRAM_CACHE_SIZE", "lots")
    with pytest.raises(UsageError, match="HWBENCH_PROGRAM_CACHE_SIZE"):
        ProgramCache.from_env()


def audit_report(**kwargs: Any) -> dict[str, Any]:
    """A quick audit of the toy kernel's groq candidate (baselines not cached), without its timings."""
    from hwbench.accuracy.audit import AuditSettings, Candidate
    from hwbench.stress.protocols import standard_auditor

    settings = AuditSettings(kernel=KERNEL, quick=True, seed=7, cache=False, **kwargs)
    data = standard_auditor(get_registry(), settings).run([Candidate("groq")]).model_dump(mode="json")
    data.pop("elapsed_s")
    data.pop("provenance")
    for p in data["protocols"]:
        for r in p["runs"]:
            r.pop("setup_s"), r.pop("run_s")
            for values in r["metrics"].values():  # the kernel's speed metrics derive from run_s
                if isinstance(values, dict):
                    for key in ("us_per_step", "rtf", "cell_steps_per_s", "gflops", "events_per_s"):
                        values.pop(key, None)
    return data


def test_an_audit_with_cached_programs_reports_what_one_without_does(
    programs: Path, traced: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HWBENCH_PROGRAM_CACHE", "off")
    without = audit_report()
    monkeypatch.setenv("HWBENCH_PROGRAM_CACHE", str(programs))
    first = audit_report()
    count = len(traced)
    assert entries(programs)
    cached = audit_report()
    assert len(traced) == count  # every program of the second audit came from the cache
    assert first == without
    assert cached == without


def test_the_environment_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from hwbench.core.engines.program_cache import program_key

    base = program_key({"kernel": "k"})[0]
    assert program_key({"kernel": "k"})[0] == base
    assert program_key({"kernel": "other"})[0] != base
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_fast_math=false")
    assert program_key({"kernel": "k"})[0] != base


def test_every_constructor_argument_of_the_cached_ops_is_in_their_trace_key() -> None:
    """A new way to configure these ops must join their trace key (or a program traced under one
    setting would be found under another): this fails when a constructor gains an argument, so
    whoever adds one also decides what ``trace_key`` says about it."""
    import inspect

    from hwbench.accuracy.numerics.emulate import EmulatingOps, EmulationWrapper

    def arguments(cls: type) -> set[str]:
        return set(inspect.signature(cls.__init__).parameters) - {"self"}

    # rules follow from the profile and the carrier; the backend from the raw ops' name
    assert arguments(EmulatingOps) == {"raw", "profile", "rules", "backend", "carrier", "counters", "seed"}
    assert arguments(EmulationWrapper) == {"profile", "counters", "seed"}  # what it hands EmulatingOps
    assert arguments(JaxOps) == {"dtype", "scatter"}
    ops = EmulationWrapper(get_registry().device("groq").numerics("default"), counters=False, seed=5)(JaxOps())
    key = trace_key_of(ops)
    assert key["raw"] == {"ops": "jax", "dtype": "float32", "scatter": "passes"}
    assert (key["counters"], key["seed"], key["carrier"]) == ([], 5, "float32")
    assert '"name"' in key["profile"]


def test_every_emulating_mode_from_the_cache_is_bit_identical_to_its_fixture(
    programs: Path, traced: list[bool]
) -> None:
    """The emulation fixtures (tests/accuracy/test_emulation_fixtures.py, which runs with the cache
    off) again, each case built twice with the cache on: compiled for the cache (under a name of
    its own), then loaded from it. Both must give the frozen bits."""
    import importlib.util
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "make_emulation_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_emulation_fixtures", script)
    assert spec is not None and spec.loader is not None
    fixtures = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fixtures  # dataclasses look their module up there
    spec.loader.exec_module(fixtures)
    with np.load(fixtures.FIXTURES) as data:
        frozen = dict(data)

    def same(got: np.ndarray, expected: np.ndarray) -> bool:  # NaN payloads aside, as the fixture test
        if expected.dtype != np.float32:
            return bool((got == expected).all())
        return bool(((got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))).all())

    # one case of each kind of program (a subset: every case compiles afresh once here): a plain
    # and a contracting fp32 model, tensor-core rounding, a saturating profile with its
    # finite-state program, stochastic rounding's stream, and counters
    keys = ("a100:cuda-fp32", "a100:tensorrt", "h100:fp8-e4m3", "groq:default", "ipu:fp16-sr", "groq:default+counters")
    cases = [case for case in fixtures.CASES if case.key in keys]
    assert len(cases) == len(keys), [c.key for c in fixtures.CASES]
    from_cache = 0
    for case in cases:
        expected = {k.split("/", 1)[1]: v for k, v in frozen.items() if k.split("/", 1)[0] == case.key}
        for attempt in ("compiled for the cache", "loaded from it"):
            before = len(traced)
            got = fixtures.run_case(case)
            assert sorted(got) == sorted(expected), case.key
            for name, value in expected.items():
                assert same(got[name], value), f"{case.key} ({attempt}): {name} differs"
        from_cache += len(traced) == before  # the second build traced nothing
    assert from_cache == len(cases)
