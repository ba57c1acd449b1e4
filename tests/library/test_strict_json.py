"""Every JSON hwbench writes is RFC 8259 (issue 33): stdout ``--json``, result files, the store's
columns, exports, sweep ledgers, profiles and the published schemas. A GroqChip audit is the case
that broke it: its FAIL score is infinite. Old files with a bare ``Infinity`` still load."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwbench.core.strict_json import NONFINITE, dumps, json_schema, loads_strict
from hwbench.testing.badinput import run_cli


def _scores(doc: dict[str, Any]) -> list[Any]:
    return [v.get("score") for p in doc["protocols"] for v in p["verdicts"]]


@pytest.fixture(scope="module")
def groq_audit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One quick GroqChip audit (a FAIL with an infinite score) through the CLI, recorded and exported."""
    root = tmp_path_factory.mktemp("strict")
    store = f"sqlite:///{root / 'store.sqlite'}"
    audit = run_cli(["audit", "-d", "groq", "--quick", "--json", "--out", str(root / "out"), "--store", store])
    assert audit.code == 1, audit.stderr
    show = run_cli(["results", "--store", store, "show", "1", "--json"])
    listing = run_cli(["results", "--store", store, "list", "--json"])
    export = run_cli(["results", "--store", store, "export", "--out", str(root / "export.json")])
    assert show.code == listing.code == export.code == 0, (show.stderr, export.stderr)
    with sqlite3.connect(root / "store.sqlite") as db:
        columns = db.execute("SELECT document, environment FROM results").fetchone()
    return {
        "stdout": audit.stdout,
        "file": (root / "out" / "report.json").read_text(),
        "show": show.stdout,
        "list": listing.stdout,
        "export": (root / "export.json").read_text(),
        "column": columns[0],
        "environment": columns[1],
        "root": root,
        "store": store,
    }


@pytest.mark.parametrize("writer", ["stdout", "file", "show", "list", "export", "column", "environment"])
def test_every_writer_is_strict_json(groq_audit: dict[str, Any], writer: str) -> None:
    loads_strict(groq_audit[writer])  # raises on a bare Infinity or NaN


def test_infinite_score_is_the_documented_string_and_reads_back(groq_audit: dict[str, Any]) -> None:
    from hwbench.accuracy.report import AuditReport

    doc = loads_strict(groq_audit["stdout"])
    assert "Infinity" in _scores(doc)  # the FAIL: written as the string, not dropped to null
    report = AuditReport.model_validate_json(groq_audit["file"])
    assert any(isinstance(s, float) and math.isinf(s) for s in _scores(report.model_dump()))
    assert loads_strict(groq_audit["column"])["verdict"] == "FAIL"


def test_old_export_with_bare_infinity_still_imports(groq_audit: dict[str, Any], tmp_path: Path) -> None:
    """An export written before strict JSON (Python's default ``Infinity``) imports, and round-trips."""
    old = json.loads(groq_audit["export"])
    old["records"][0]["uid"] = "0" * 32
    text = json.dumps(old).replace('"Infinity"', "Infinity")
    assert "Infinity," in text or "Infinity}" in text
    (tmp_path / "old.json").write_text(text)
    store = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert run_cli(["results", "--store", store, "import", str(tmp_path / "old.json")]).code == 0
    shown = run_cli(["results", "--store", store, "show", "1", "--json"])
    assert "Infinity" in _scores(loads_strict(shown.stdout)["document"])


def test_library_to_json_and_profile_are_strict() -> None:
    from hwbench.core.plugins import get_registry

    profile = get_registry().device("groq").numerics(None)
    loads_strict(profile.to_json())


@pytest.mark.parametrize("name", ["run", "bench", "audit", "profile", "sweep"])
def test_published_schemas_state_the_nonfinite_strings(name: str) -> None:
    out = run_cli(["schema", name])
    assert out.code == 0
    schema = loads_strict(out.stdout)
    assert "Infinity" in schema["$comment"]
    assert _numbers_without_strings(schema) == 0  # every number field admits the strings


def _numbers_without_strings(node: Any) -> int:
    """Number schemas not paired, in their anyOf, with the enum of the non-finite strings."""
    if isinstance(node, list):
        return sum(_numbers_without_strings(n) for n in node)
    if not isinstance(node, dict):
        return 0
    if node.get("type") == "number":
        return 1
    options = node.get("anyOf") or []
    paired = any(o.get("enum") == list(NONFINITE) for o in options if isinstance(o, dict))
    rest = [o for o in options if not (paired and isinstance(o, dict) and o.get("type") == "number")]
    return sum(_numbers_without_strings(v) for k, v in node.items() if k != "anyOf") + _numbers_without_strings(rest)


def test_sweep_ledger_writes_strict_and_reads_old_lines(tmp_path: Path) -> None:
    from hwbench.stress.sweep_ledger import JsonlLedger

    ledger = JsonlLedger(tmp_path / "ledger.jsonl")
    ledger.record("a", {"score": math.inf})
    with (tmp_path / "ledger.jsonl").open("a") as fh:
        fh.write('{"key": "b", "report": {"score": Infinity}}\n')  # a line written before the rule
    for line in (tmp_path / "ledger.jsonl").read_text().splitlines()[:1]:
        loads_strict(line)
    done = ledger.recorded()
    assert done["a"]["score"] == "Infinity" and done["b"]["score"] == math.inf


keys = st.text(st.characters(codec="utf-8"), max_size=4)
nested = st.recursive(
    st.floats() | st.integers() | st.text(st.characters(codec="utf-8"), max_size=5) | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


def _expected(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return NONFINITE[2] if math.isnan(value) else NONFINITE[0] if value > 0 else NONFINITE[1]
    if isinstance(value, list):
        return [_expected(v) for v in value]
    if isinstance(value, dict):
        return {k: _expected(v) for k, v in value.items()}
    return value


@given(nested)
def test_dumps_is_strict_and_maps_only_nonfinite_numbers(value: Any) -> None:
    assert loads_strict(dumps(value)) == _expected(value)


def test_strict_parser_refuses_bare_constants() -> None:
    for text in ("Infinity", "[-Infinity]", '{"a": NaN}'):
        with pytest.raises(ValueError):
            loads_strict(text)


def test_schema_helper_on_a_model() -> None:
    from pydantic import BaseModel

    class M(BaseModel):
        x: float
        n: int

    props = json_schema(M)["properties"]
    assert props["x"]["anyOf"][1]["enum"] == list(NONFINITE)
    assert props["n"]["type"] == "integer"
