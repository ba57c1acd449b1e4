"""The library API (issue 33): ``hwbench.audit``/``run``/``bench``/``open_store`` on real devices and a
real store, loaded lazily; what a script or notebook gets back, and how it renders."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hwbench
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.strict_json import loads_strict


def test_the_issue_one_liner_prints_fail() -> None:
    """``python -c 'import hwbench; print(hwbench.audit("groq", quick=True).verdict)'`` prints FAIL."""
    code = 'import hwbench; print(hwbench.audit("groq", quick=True).verdict)'
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                         env={"HWBENCH_STORE": "none", "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout == "FAIL\n"


def test_import_hwbench_loads_nothing_heavy() -> None:
    code = "import hwbench, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in " + (
        "('numpy', 'pydantic', 'rich', 'jax', 'sqlalchemy')) + [m for m in sys.modules if m.startswith('hwbench.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout


def test_lazy_names_are_the_library_functions() -> None:
    from hwbench.library import audit, bench, run, store

    assert hwbench.audit is audit.audit and hwbench.run is run.run and hwbench.bench is bench.bench
    assert hwbench.open_store is store.open_store
    assert set(dir(hwbench)) >= {"audit", "run", "bench", "open_store", "Audit"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hwbench.nope  # noqa: B018


def test_run_bench_and_history_into_pandas(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    run = hwbench.run(cells=64, ms=10, store=url, out=tmp_path / "run.json")
    assert run.timing.ncells == 64 and len(run.traces) == 10  # 10 ms at the 1 ms sample interval
    assert loads_strict((tmp_path / "run.json").read_text())["timing"]["ncells"] == 64
    assert "Probed traces" in run._repr_html_()
    bench = hwbench.bench(cells=[64], connectivity=(False,), repeats=1, ms=10, out=tmp_path / "b", store=url,
                          progress="none")  # fmt: skip
    assert [p.name for p in bench.written] == ["bench.json", "bench.png"] and len(bench.timings) == 1
    assert "run time plot" in bench._repr_html_()
    store = hwbench.open_store(url)
    frame = store.to_pandas()
    assert list(frame["kind"]) == ["bench", "run"]  # newest first
    assert str(frame["created"].dtype).startswith("datetime64") and frame["size"].tolist() == [64, 64]
    assert list(store.to_pandas(kind="run")["id"]) == [1]
    assert store.to_pandas(kind="audit").empty
    with pytest.raises(UsageError, match="unknown filter colour"):
        store.to_pandas(colour="red")
    with pytest.raises(UsageError, match="ISO date"):
        store.list(since="yesterday")


def test_to_pandas_without_pandas_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = hwbench.open_store(str(tmp_path / "s.sqlite"))
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ModuleNotFoundError
    with pytest.raises(UnavailableError, match="pip install"):
        store.to_pandas()


def test_library_refuses_like_the_cli() -> None:
    with pytest.raises(UsageError, match="give at least one --device NAME"):  # the protocols say what they need
        hwbench.audit([])
    with pytest.raises(UsageError, match=r"unknown device 'grok'.*Did you mean 'groq'"):
        hwbench.audit("grok", quick=True)
    with pytest.raises(UsageError, match="multiple of the sample interval"):
        hwbench.run(cells=64, ms=0.3)


def test_progress_choices() -> None:
    from hwbench.library.progress import NotebookProgress, Progress, RichProgress, make_progress

    assert type(make_progress("none")) is Progress
    assert isinstance(make_progress("rich"), RichProgress)
    assert isinstance(make_progress("notebook"), NotebookProgress)
    assert isinstance(make_progress("auto"), RichProgress)  # not inside a Jupyter kernel
    mine = Progress()
    assert make_progress(mine) is mine
