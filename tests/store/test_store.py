"""The results store on SQLite: records, filters, concurrent writer processes, migration from schema v1."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hwbench.core.errors import UsageError
from hwbench.store.db import Filters, Store
from hwbench.store.location import resolve_location
from hwbench.store.schema import SCHEMA_VERSION
from tests.store.conftest import bench_doc, write_concurrently

DATA = Path(__file__).parent.parent / "data"


def test_record_list_get_filters(store, environment) -> None:
    a = store.record(bench_doc([1.0, 1.1], created="2026-01-01T00:00:00+00:00"), environment, ("base",))
    b = store.record(bench_doc([2.0], created="2026-02-01T10:00:00+01:00", device="groq"), environment, ())
    assert [r.id for r in store.list(Filters())] == [b, a]  # newest first
    assert [r.id for r in store.list(Filters(tag="base"))] == [a]
    assert [r.id for r in store.list(Filters(device="groq"))] == [b]
    assert [r.id for r in store.list(Filters(since="2026-01-15"))] == [b]
    assert [r.id for r in store.list(Filters(until="2026-01-15"))] == [a]
    assert [r.id for r in store.list(Filters(until="2026-02-01"))] == [b, a]  # a date includes its whole day
    assert [r.id for r in store.list(Filters(until="2026-02-01T08:59:59+00:00"))] == [a]
    got = store.get(b)
    assert got.created == "2026-02-01T09:00:00+00:00"  # stored as UTC
    assert got.run_s == 2.0 and got.size == 729 and got.kind == "bench"
    assert got.document["timings"][0]["run_s_all"] == [2.0]
    assert got.environment.python and got.environment.libraries["numpy"]
    with pytest.raises(UsageError, match="no result '999'"):
        store.get(999)


def test_unknown_scheme_and_off_switch(monkeypatch) -> None:
    with pytest.raises(UsageError, match="scheme 'mysql' is not supported"):
        resolve_location("mysql://x/y")
    monkeypatch.setenv("HWBENCH_STORE", "none")
    assert resolve_location() is None
    assert resolve_location("x.sqlite", disabled=True) is None


def test_concurrent_writer_processes(tmp_path) -> None:
    """4 processes open a brand-new store (racing on the migration) and write at once: nothing is lost."""
    url, workers, per = f"sqlite:///{tmp_path / 'shared.sqlite'}", 4, 25
    write_concurrently(url, list(range(workers)), per)
    store = Store(resolve_location(url))
    assert store.count() == workers * per
    for w in range(workers):
        assert len(store.list(Filters(tag=f"w{w}", limit=None))) == per
    con = sqlite3.connect(tmp_path / "shared.sqlite")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT version FROM hwbench_store_version").fetchall() == [(SCHEMA_VERSION,)]


def test_migration_from_schema_v1(tmp_path) -> None:
    """A store made by the first schema (frozen raw DDL) opens with today's code; its records survive."""
    import json

    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript((DATA / "store_v1.sql").read_text())
    doc = bench_doc([1.0, 1.2, 1.1])
    con.execute(
        "INSERT INTO results (uid, kind, schema, created, kernel, device, mode, engine, dtype, size, verdict, tags,"
        " run_s, environment, document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("a" * 32, "bench", doc["schema"], "2025-06-01T00:00:00+00:00", "io-ehh", "cpu", "fp32", "jax", "float32",
         729, None, "nightly,v1", 1.0, json.dumps({"python": "3.10.0"}), json.dumps(doc)),
    )  # fmt: skip
    con.commit()
    con.close()
    store = Store(resolve_location(str(path)))
    [old] = store.list(Filters(tag="nightly"))
    assert old.uid == "a" * 32 and old.created == "2025-06-01T00:00:00+00:00"
    full = store.get(old.id)
    assert full.tags == ["nightly", "v1"] and full.environment.python == "3.10.0"
    assert full.document["timings"][0]["run_s_all"] == [1.0, 1.2, 1.1]
    assert full.execution == old.execution == "real"  # backfilled from the document by migrate_to_3
    rows = sqlite3.connect(path).execute("SELECT config, samples FROM timings").fetchall()
    assert rows == [("io-ehh|cpu|fp32|jax|float32|729|True", "[1.0, 1.2, 1.1]")]  # backfilled by migrate_to_2
    assert sqlite3.connect(path).execute("SELECT version FROM hwbench_store_version").fetchone() == (SCHEMA_VERSION,)


def test_newer_store_is_refused(tmp_path) -> None:
    path = tmp_path / "future.sqlite"
    con = sqlite3.connect(path)
    con.executescript((DATA / "store_v1.sql").read_text())
    con.execute("UPDATE hwbench_store_version SET version = 99")
    con.commit()
    con.close()
    with pytest.raises(UsageError, match="schema version 99, newer than this hwbench understands"):
        Store(resolve_location(str(path)))


def test_export_import_round_trip(store, environment, tmp_path) -> None:
    from hwbench.store.models import StoreExport

    ids = [store.record(bench_doc([1.0 + i]), environment, ("x",)) for i in range(3)]
    records = store.export(Filters(limit=None))
    other = Store(resolve_location(str(tmp_path / "other.sqlite")))
    again = StoreExport.model_validate_json(StoreExport(records=records).model_dump_json(by_alias=True)).records
    assert len(other.import_records(again).added) == 3
    summary = other.import_records(again)  # idempotent: uids already there
    assert summary.added == [] and summary.skipped == 3
    assert sorted(r.uid for r in other.list(Filters(tag="x"))) == sorted(store.get(i).uid for i in ids)


def test_import_refuses_records_without_their_document(store, environment, tmp_path) -> None:
    """An export whose record lost its document (``"document": null``) is a usage error, not a crash."""
    store.record(bench_doc([1.0]), environment, ("x",))
    listed = store.list(Filters(limit=None))  # list() leaves documents out
    other = Store(resolve_location(str(tmp_path / "other.sqlite")))
    with pytest.raises(UsageError, match=r"1 record\(s\) have no document or environment"):
        other.import_records(listed)
    assert other.count() == 0
