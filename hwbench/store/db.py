"""The store's database: engine set-up (SQLite WAL / PostgreSQL), recording, queries, import/export.

SQLite is opened in WAL mode with a busy timeout, and every transaction starts ``BEGIN IMMEDIATE``
(the writer lock is taken up front, so concurrent writer processes queue instead of failing with
"database is locked" halfway through). All SQL is built by SQLAlchemy Core; no string-built SQL.
"""

from __future__ import annotations

import builtins  # Store.list shadows the name list in the class body's annotations
import datetime as _dt
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, delete, event, func, insert, select
from sqlalchemy.exc import DatabaseError, OperationalError, SQLAlchemyError

from hwbench.core.errors import UnavailableError, UsageError
from hwbench.core.strict_json import dumps_compact
from hwbench.store import extract
from hwbench.store.environment import Environment
from hwbench.store.location import StoreLocation
from hwbench.store.migrations import upgrade
from hwbench.store.models import StoredResult
from hwbench.store.schema import SCHEMA_VERSION, result_tags, results, timings

BUSY_TIMEOUT_MS = 30_000

_ENGINES: dict[str, Engine] = {}


def _json(value: Any) -> str:
    """The JSON columns' text: RFC 8259 (non-finite numbers as strings, :mod:`hwbench.core.strict_json`).
    Rows written before, with a bare Infinity, still read: the column's parser is Python's."""
    return dumps_compact(value)


def _sqlite_engine(url: str) -> Engine:
    path = url.removeprefix("sqlite:///")
    if path and path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000}, json_serializer=_json)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _switch_to_wal(cursor)
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _switch_to_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode = WAL``, retried while another process holds the new file: SQLite may
    answer "database is locked" at once there instead of waiting out the busy timeout (seen with
    several writers racing to create one store)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def open_engine(location: StoreLocation) -> Engine:
    """One engine per URL per process, migrated to the current schema on first use."""
    engine = _ENGINES.get(location.url)
    if engine is not None:
        return engine
    try:
        engine = (
            _sqlite_engine(location.url) if location.is_sqlite else create_engine(location.url, json_serializer=_json)
        )
        with engine.begin() as conn:
            upgrade(conn, SCHEMA_VERSION)
    except ModuleNotFoundError as exc:
        raise UnavailableError(f"the store at {location.describe()} needs the '{exc.name}' package") from None
    except OperationalError as exc:
        reason = str(exc.orig).splitlines()[0] if exc.orig else str(exc).splitlines()[0]
        raise UnavailableError(f"cannot open the results store {location.describe()}: {reason}") from None
    except DatabaseError as exc:  # e.g. "file is not a database": the user pointed the store at another file
        raise UsageError(
            f"the results store {location.describe()} is not a hwbench store ({describe_error(exc)}): "
            "give --store / HWBENCH_STORE a hwbench store, or a new file name to create one"
        ) from None
    except OSError as exc:  # its folder cannot be made (a file is in the way, no permission)
        raise UsageError(
            f"cannot create the results store {location.describe()}: {exc.strerror or exc}; "
            "give --store / HWBENCH_STORE a path in a writable folder"
        ) from None
    _ENGINES[location.url] = engine
    return engine


def _utc(created: str | None) -> str:
    """Creation time as UTC ISO-8601 (sortable as text in both databases)."""
    try:
        stamp = _dt.datetime.fromisoformat(str(created))
    except ValueError:
        stamp = _dt.datetime.now(_dt.timezone.utc)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=_dt.timezone.utc)
    return stamp.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class Filters:
    """``results list`` / ``export`` filters; None means "any"."""

    kind: str | None = None
    kernel: str | None = None
    device: str | None = None
    mode: str | None = None
    tag: str | None = None
    since: str | None = None
    until: str | None = None
    limit: int | None = 50


@dataclass(frozen=True)
class TimingPoint:
    result_id: int
    created: str
    config: str
    run_s: float
    execution: str | None = None  # the result's: real / emulated (a host's time)


@dataclass
class ImportSummary:
    added: list[int] = field(default_factory=list)
    skipped: int = 0


class Store:
    """A results store at one location (see :mod:`hwbench.store.location`)."""

    def __init__(self, location: StoreLocation) -> None:
        self.location = location
        self.engine = open_engine(location)

    def record(
        self,
        document: dict[str, Any],
        environment: Environment,
        tags: tuple[str, ...] = (),
        uid: str | None = None,
    ) -> int:
        """Store one result document (as written to its JSON file) and return its id."""
        kind = extract.kind_of(document)
        if not kind:
            raise UsageError("not a hwbench result: the document has no 'schema' field")
        names = sorted({t.strip() for t in tags if t.strip()})
        row = {
            "uid": uid or uuid.uuid4().hex,
            "kind": kind,
            "schema": str(document["schema"]),
            "created": _utc(document.get("provenance", {}).get("created")),
            "tags": ",".join(names),
            "environment": environment.model_dump(mode="json"),
            "document": extract.slim(kind, document),
            **extract.indexed_columns(kind, document),
        }
        with self.engine.begin() as conn:
            return self._insert(conn, row, names, extract.timing_rows(kind, document))

    @staticmethod
    def _insert(conn: Any, row: dict[str, Any], names: list[str], timing_rows: list[dict[str, Any]]) -> int:
        rid = conn.execute(insert(results).values(**row).returning(results.c.id)).scalar_one()
        if names:
            conn.execute(insert(result_tags), [{"result_id": rid, "tag": t} for t in names])
        if timing_rows:
            conn.execute(insert(timings), [{"result_id": rid, **r} for r in timing_rows])
        return int(rid)

    def warm_up(self, environment: Environment) -> None:
        """Compile the insert statements now (in a rolled-back transaction), so that the one record a
        command makes at its end finds them in SQLAlchemy's statement cache (~10 ms saved)."""
        document = {"schema": "hwbench.warm-up/1", "timings": [{"kernel": "k", "run_s": 1.0, "run_s_all": [1.0]}]}
        row = {"uid": uuid.uuid4().hex, "kind": "warm-up", "schema": document["schema"], "created": _utc(None),
               "tags": "t", "environment": environment.model_dump(mode="json"), "document": document,
               **extract.indexed_columns("warm-up", document)}  # fmt: skip
        with self.engine.connect() as conn:
            transaction = conn.begin()
            try:
                self._insert(conn, row, ["t"], extract.timing_rows("warm-up", document))
            finally:
                transaction.rollback()

    def _select(self, filters: Filters, columns: list[Any]) -> Any:
        query = select(*columns)
        c = results.c
        for column, value in (
            (c.kind, filters.kind),
            (c.kernel, filters.kernel),
            (c.device, filters.device),
            (c.mode, filters.mode),
        ):
            if value:
                query = query.where(column == value)
        if filters.tag:
            tagged = select(result_tags.c.result_id).where(result_tags.c.tag == filters.tag)
            query = query.where(c.id.in_(tagged))
        if filters.since:
            query = query.where(c.created >= _utc(filters.since))
        if filters.until and len(filters.until) == 10:  # a date: the whole day
            next_day = _dt.date.fromisoformat(filters.until) + _dt.timedelta(days=1)
            query = query.where(c.created < _utc(next_day.isoformat()))
        elif filters.until:
            query = query.where(c.created <= _utc(filters.until))
        query = query.order_by(c.created.desc(), c.id.desc())
        return query.limit(filters.limit) if filters.limit else query

    def list(self, filters: Filters) -> list[StoredResult]:
        """Newest first, without documents (cheap even over many thousands of results)."""
        c = results.c
        columns = [c.id, c.uid, c.kind, c.created, c.kernel, c.device, c.mode, c.engine, c.dtype, c.size]
        columns += [c.verdict, c.run_s, c.execution, c.tags]
        with self.engine.connect() as conn:
            rows = conn.execute(self._select(filters, columns)).all()
        return [StoredResult.from_row(r._mapping) for r in rows]

    def timing_history(self, filters: Filters) -> builtins.list[TimingPoint]:
        """Every timed configuration of the matching results, oldest first: the history plot's points."""
        matching = self._select(filters, [results.c.id]).subquery()
        query = (
            select(results.c.id, results.c.created, timings.c.config, timings.c.run_s, results.c.execution)
            .join(timings, timings.c.result_id == results.c.id)
            .where(results.c.id.in_(select(matching.c.id)))
            .order_by(results.c.created, results.c.id, timings.c.ordinal)
        )
        with self.engine.connect() as conn:
            rows = conn.execute(query)
            return [TimingPoint(r.id, r.created, r.config, r.run_s, r.execution) for r in rows if r.run_s is not None]

    def get(self, ref: int | str) -> StoredResult:
        """One result with its document and environment, by id (or uid)."""
        c = results.c
        key = c.id == int(ref) if str(ref).isdigit() else c.uid == str(ref)
        with self.engine.connect() as conn:
            row = conn.execute(select(results).where(key)).first()
            if row is None:
                where = self.location.describe()
                raise UsageError(f"no result '{ref}' in the store {where} (see 'hwbench results list')")
            result = StoredResult.from_row(row._mapping)
            tag_rows = conn.execute(select(result_tags.c.tag).where(result_tags.c.result_id == row.id)).scalars()
            result.tags = sorted(tag_rows)
        return result

    def latest(self, filters: Filters) -> StoredResult:
        found = self.list(Filters(**{**filters.__dict__, "limit": 1}))
        if not found:
            raise UsageError("no stored result matches those filters (see 'hwbench results list')")
        return self.get(found[0].id)

    def export(self, filters: Filters) -> builtins.list[StoredResult]:
        with self.engine.connect() as conn:
            ids = conn.execute(self._select(filters, [results.c.id])).scalars().all()
        return [self.get(i) for i in ids]

    def import_records(self, records: builtins.list[StoredResult]) -> ImportSummary:
        """Add records from an export; a record whose uid is already here is skipped (idempotent).

        Every record must carry its document and environment (as ``export`` writes them; ``list``
        leaves them out): otherwise nothing is added and the answer names the first such record.
        """
        complete = [(r, r.document, r.environment) for r in records]
        missing = [r.uid for r, doc, env in complete if doc is None or env is None]
        if missing:
            raise UsageError(
                f"{len(missing)} record(s) have no document or environment (first: uid {missing[0]}); "
                "import what 'hwbench results export' writes"
            )
        foreign = [r.uid for r, doc, _ in complete if not str((doc or {}).get("schema", "")).startswith("hwbench.")]
        if foreign:
            raise UsageError(
                f"record uid {foreign[0]} holds no hwbench result (its document's 'schema' is not 'hwbench.*'); "
                "import exports as 'hwbench results export' writes them"
            )
        summary = ImportSummary()
        with self.engine.connect() as conn:
            query = select(results.c.uid).where(results.c.uid.in_([r.uid for r in records]))
            known = set(conn.execute(query).scalars())
        for rec, document, environment in complete:
            if rec.uid in known:
                summary.skipped += 1
            elif document is not None and environment is not None:  # checked above
                summary.added.append(self.record(document, environment, tuple(rec.tags), uid=rec.uid))
        return summary

    def count(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(results)).scalar_one())

    def delete(self, ids: builtins.list[int]) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(results).where(results.c.id.in_(ids)))


def describe_error(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return (str(orig) if orig else str(exc)).splitlines()[0]
