"""The results store on a real PostgreSQL server started by the fixture (initdb + pg_ctl, unix socket).

Skipped, with the reason, only where no server can be started (no initdb/pg_ctl on PATH, or the
start fails). initdb refuses to run as root, so as root the server runs as the ``postgres`` user.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hwbench.cli.main import main
from hwbench.store.db import Filters, Store
from hwbench.store.location import resolve_location
from hwbench.testing.badinput import run_cli
from tests.store.conftest import bench_doc, write_concurrently


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    if shutil.which("runuser") is None:
        pytest.skip("PostgreSQL: running as root and runuser is missing (initdb refuses root)")
    return ["runuser", "-u", "postgres", "--", *cmd]


def _server_bin() -> Path | None:
    """initdb/pg_ctl on PATH, or in Debian's versioned /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return versions[-1].parent if versions else None


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    bindir = _server_bin()
    if bindir is None:
        pytest.skip("PostgreSQL: no initdb/pg_ctl (PATH, /usr/lib/postgresql/*/bin): no server can be started here")
    root = Path(tempfile.mkdtemp(prefix="hwbench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", _free_port()
    run = lambda cmd: subprocess.run(_as_server_user(cmd), capture_output=True, text=True, timeout=120)  # noqa: E731
    init = run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
    if init.returncode != 0:
        pytest.skip(f"PostgreSQL: initdb failed: {init.stderr.strip().splitlines()[-1:]}")
    options = f"-k {root} -p {port} -c listen_addresses='' -c fsync=off"
    pg_ctl = str(bindir / "pg_ctl")
    start = run([pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "-t", "60", "start"])
    if start.returncode != 0:
        log = (root / "log").read_text() if (root / "log").exists() else start.stderr
        pytest.skip(f"PostgreSQL: server did not start: {log.strip().splitlines()[-1:]}")
    try:
        yield f"postgresql://postgres@/postgres?host={root}&port={port}"
    finally:
        run([pg_ctl, "-D", str(data), "-m", "immediate", "stop"])
        shutil.rmtree(root, ignore_errors=True)


def test_postgres_store_records_filters_and_gate(postgres_url, environment, capsys) -> None:
    location = resolve_location(postgres_url)
    assert location.url.startswith("postgresql+psycopg://")  # the psycopg 3 driver
    store = Store(location)
    base = store.record(bench_doc([1.0, 1.01, 0.99, 1.0, 1.02]), environment, ("pg-base",))
    slow = store.record(bench_doc([1.3, 1.31, 1.29, 1.3, 1.32], created="2026-03-01T00:00:00+00:00"), environment)
    assert [r.id for r in store.list(Filters(tag="pg-base"))] == [base]
    assert store.get(slow).document["timings"][0]["run_s_all"][0] == 1.3
    assert main(["results", "--store", postgres_url, "compare", str(base), str(slow), "--fail-above", "10"]) == 1
    assert main(["results", "--store", postgres_url, "compare", str(base), str(slow), "--fail-above", "40"]) == 0


def test_postgres_concurrent_writers(postgres_url) -> None:
    write_concurrently(postgres_url, [10 + w for w in range(4)], 10)
    store = Store(resolve_location(postgres_url))
    for w in range(4):
        assert len(store.list(Filters(tag=f"w{10 + w}", limit=None))) == 10


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda r: r.update(uid="u" * 40), "results.uid is 40 characters long; a PostgreSQL store keeps at most 32"),
        (lambda r: r["document"]["timings"][0].update(kernel="k" * 300), "results.kernel is 307 characters long"),
        (lambda r: r["document"]["timings"][0].update(ncells=2**40), "results.size is 1099511627776, outside"),
        (lambda r: r["document"]["timings"][0].update(dtype="f\u0000"), "holds a NUL character"),
    ],
    ids=["uid", "kernel", "size", "nul"],
)
def test_postgres_import_refuses_what_its_columns_cannot_hold(postgres_url, environment, tmp_path, change, fragment):
    """What PostgreSQL itself would refuse halfway (a DataError) is refused first, naming the record;
    the import is one transaction, so the good record before it is not stored either."""
    store = Store(resolve_location(postgres_url))
    good, bad = ({**record, "uid": uid} for record, uid in zip(_exported(store, environment), ("g" * 32, "b" * 32)))
    change(bad)
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"schema": "hwbench.store-export/1", "records": [good, bad]}))
    before = store.count()
    outcome = run_cli(["results", "--store", postgres_url, "import", str(path)])
    assert outcome.code == 2 and f"records[1] (uid {bad['uid']}): " in outcome.stderr, outcome.stderr
    assert fragment in outcome.stderr and store.count() == before
    missing = run_cli(["results", "--store", postgres_url, "show", str(2**31)])  # past the INTEGER id: no such id
    assert missing.code == 2 and f"no result '{2**31}'" in missing.stderr


def _exported(store: Store, environment) -> list[dict]:
    rid = store.record(bench_doc([1.0, 1.1]), environment)
    record = json.loads(store.get(rid).model_dump_json())
    store.delete([rid])
    return [json.loads(json.dumps(record)), json.loads(json.dumps(record))]


def test_postgres_keeps_sweep_cells_whose_keys_are_longer_than_a_uid(postgres_url, environment) -> None:
    """A sweep cell's key (device, overrides, op group, seed, dt) is longer than the 32-character uid
    column, which PostgreSQL enforces: each cell is stored under a hashed uid and found again on resume."""
    from types import SimpleNamespace

    from hwbench.cli.sweep_store import StoreLedger, cell_uid

    key = "groq:default|reduced_mantissa_bits=13|exp+div@m10/nearest_even|seed=42|dt/1"
    assert len(f"s1:{key}") > 32 and len(cell_uid("s1", key)) == 32
    pending = SimpleNamespace(store=Store(resolve_location(postgres_url)), tags=(), environment=environment)
    ledger = StoreLedger(pending, "s1", {key: SimpleNamespace(ops=())})
    ledger.record(key, bench_doc([1.0, 1.1]))
    assert list(ledger.recorded()) == [key]
