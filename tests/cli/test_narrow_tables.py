"""The audit and ``results`` tables read at 80 columns, piped (issue 33): no line wider than the
terminal, and no word split across lines ("referenc/e", a configuration key over six lines)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwbench.core.strict_json import loads_strict

HWBENCH = [sys.executable, "-m", "hwbench.cli.main"]


def _run(argv: list[str], store: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    env.update(COLUMNS="80", HWBENCH_STORE=store)
    return subprocess.run([*HWBENCH, *argv], capture_output=True, text=True, env=env, timeout=900)  # piped


def _fits(text: str, words: set[str]) -> None:
    lines = text.splitlines()
    assert lines and max(map(len, lines)) <= 80, max(lines, key=len)
    tokens = set(text.split())
    assert words <= tokens, sorted(words - tokens)  # every word whole, on one line


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("narrow") / "store.sqlite")
    for _ in range(2):
        out = _run(["bench", "--cells", "64", "--ms", "2", "--repeats", "3", "--unconnected-only", "--engine", "numpy",
                    "--out", str(Path(path).parent / f"b{_}")], path)  # fmt: skip
        assert out.returncode == 0, out.stderr
    return path


def test_audit_table_fits_80_columns(store: str) -> None:
    out = _run(["audit", "-d", "groq", "--quick", "--protocol", "validation"], store)
    assert out.returncode == 1, out.stderr  # FAIL
    report = loads_strict(_run(["results", "show", "3", "--json"], store).stdout)["document"]
    labels = {w for p in report["protocols"] for r in p["runs"] for w in r["label"].split()}
    _fits(out.stdout, labels | {"reference", "matched", "vRossum"})


def test_results_list_and_compare_fit_80_columns(store: str) -> None:
    listing = _run(["results", "list"], store)
    assert listing.returncode == 0, listing.stderr
    _fits(listing.stdout, {"bench", "io-ehh", "float32", "verdict", "tags"})
    compared = _run(["results", "compare", "1", "2"], store)
    assert compared.returncode == 0, compared.stderr
    key = loads_strict(_run(["results", "compare", "1", "2", "--json"], store).stdout)["timings"][0]["config"]
    _fits(compared.stdout, set(key.split("|")) | {"change", "configuration"})
