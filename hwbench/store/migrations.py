"""Versioned schema migrations: a version row plus ordered migration functions.

Each migration is a function from version N-1 to N that creates what it needs through SQLAlchemy
constructs (frozen here, never imported from :mod:`hwbench.store.schema`, which always describes the
newest version) and backfills data. :func:`upgrade` runs in one transaction that holds the writer
lock (SQLite ``BEGIN IMMEDIATE``; a PostgreSQL advisory lock), so concurrent first openings of a new
store, or of an old one by a newer hwbench, apply each migration exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Connection,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)

from hwbench.core.errors import UsageError
from hwbench.store.extract import execution_of, timing_rows

_ADVISORY_LOCK_KEY = 0x68776265  # "hwbe": serialises migrations on a shared PostgreSQL server


@dataclass(frozen=True)
class _V1:
    version: Table
    results: Table


def _v1_tables(md: MetaData) -> _V1:
    version = Table(
        "hwbench_store_version",
        md,
        Column("id", Integer, primary_key=True),
        Column("version", Integer, nullable=False),
    )
    results = Table(
        "results",
        md,
        Column("id", Integer, primary_key=True, autoincrement=True),
        Column("uid", String(32), nullable=False, unique=True),
        Column("kind", String(32), nullable=False, index=True),
        Column("schema", String(64), nullable=False),
        Column("created", String(40), nullable=False, index=True),
        Column("kernel", String(128), index=True),
        Column("device", String(256), index=True),
        Column("mode", String(128), index=True),
        Column("engine", String(128)),
        Column("dtype", String(64)),
        Column("size", Integer),
        Column("verdict", String(16)),
        Column("tags", Text, nullable=False, default=""),
        Column("run_s", Float),
        Column("environment", JSON, nullable=False),
        Column("document", JSON, nullable=False),
    )
    return _V1(version, results)


def migrate_to_1(conn: Connection) -> None:
    """v1: one ``results`` table (indexed columns, JSON document and environment, comma-joined tags)."""
    md = MetaData()
    _v1_tables(md)
    md.create_all(conn)


def migrate_to_2(conn: Connection) -> None:
    """v2: tags in their own table (exact-match filters) and one row per timed configuration with its
    repeat samples (history and comparison without parsing documents); both backfilled from v1 rows."""
    md = MetaData()
    results = _v1_tables(md).results
    tags = Table(
        "result_tags",
        md,
        Column("result_id", Integer, ForeignKey("results.id", ondelete="CASCADE"), primary_key=True),
        Column("tag", String(128), primary_key=True, index=True),
    )
    timings = Table(
        "timings",
        md,
        Column("result_id", Integer, ForeignKey("results.id", ondelete="CASCADE"), primary_key=True),
        Column("ordinal", Integer, primary_key=True),
        Column("config", String(512), nullable=False, index=True),
        Column("engine", String(128)),
        Column("dtype", String(64)),
        Column("ncells", Integer),
        Column("connected", Boolean),
        Column("run_s", Float),
        Column("us_per_step", Float),
        Column("samples", JSON, nullable=False),
    )
    md.create_all(conn, tables=[tags, timings])
    for row in conn.execute(select(results.c.id, results.c.kind, results.c.tags, results.c.document)):
        names = sorted({t for t in (row.tags or "").split(",") if t})
        if names:
            conn.execute(insert(tags), [{"result_id": row.id, "tag": t} for t in names])
        rows = timing_rows(row.kind, row.document)
        if rows:
            conn.execute(insert(timings), [{"result_id": row.id, **r} for r in rows])


def migrate_to_3(conn: Connection) -> None:
    """v3: ``results.execution`` (real / emulated: whether a result's times are a chip's or this host's
    emulation of it), backfilled from the documents."""
    conn.execute(text("ALTER TABLE results ADD COLUMN execution VARCHAR(32)"))
    md = MetaData()
    results = _v1_tables(md).results
    added = Table("results", MetaData(), Column("id", Integer, primary_key=True), Column("execution", String(32)))
    for row in conn.execute(select(results.c.id, results.c.kind, results.c.document)):
        value = execution_of(row.kind, row.document)
        if value is not None:
            conn.execute(update(added).where(added.c.id == row.id).values(execution=value))


@dataclass(frozen=True)
class Migration:
    version: int
    apply: Callable[[Connection], None]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, migrate_to_1),
    Migration(2, migrate_to_2),
    Migration(3, migrate_to_3),
)


def current_version(conn: Connection) -> int:
    """The store's schema version; 0 for an empty database."""
    if not inspect(conn).has_table("hwbench_store_version"):
        return 0
    md = MetaData()
    version = _v1_tables(md).version
    value = conn.execute(select(func.max(version.c.version))).scalar()
    return int(value or 0)


def upgrade(conn: Connection, target: int) -> int:
    """Bring the store to ``target`` inside the caller's (locking) transaction; returns the old version."""
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(_ADVISORY_LOCK_KEY)))
    old = current_version(conn)
    if old > target:
        raise UsageError(
            f"the results store has schema version {old}, newer than this hwbench understands ({target}): "
            "upgrade hwbench, or point --store/HWBENCH_STORE at another store"
        )
    md = MetaData()
    version = _v1_tables(md).version
    for migration in MIGRATIONS:
        if old < migration.version <= target:
            migration.apply(conn)
            if migration.version == 1:
                conn.execute(insert(version).values(id=1, version=1))
            else:
                conn.execute(update(version).where(version.c.id == 1).values(version=migration.version))
    return old
