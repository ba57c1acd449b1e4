"""The store's tables as the current code reads and writes them (schema version ``SCHEMA_VERSION``).

Older versions are frozen in :mod:`hwbench.store.migrations`; this module always describes the newest.
Columns that filters and listings use are indexed; the full result document and the environment are
kept as JSON so that new result kinds need no schema change.
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, Float, ForeignKey, Integer, MetaData, String, Table, Text

SCHEMA_VERSION = 3

metadata = MetaData()

version_table = Table(
    "hwbench_store_version",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)

results = Table(
    "results",
    metadata,
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
    Column("tags", Text, nullable=False, default=""),  # v1's tag list; from v2 on, result_tags is authoritative
    Column("execution", String(32)),  # v3: real / emulated (whose times these are)
    Column("run_s", Float),
    Column("environment", JSON, nullable=False),
    Column("document", JSON, nullable=False),
)

result_tags = Table(
    "result_tags",
    metadata,
    Column("result_id", Integer, ForeignKey("results.id", ondelete="CASCADE"), primary_key=True),
    Column("tag", String(128), primary_key=True, index=True),
)

timings = Table(
    "timings",
    metadata,
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
