"""Store records as they cross process and file boundaries (``--json``, export files)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from hwbench.store.environment import Environment


class StoredResult(BaseModel):
    """One stored result: the indexed columns, and (from ``show``/``export``) document and environment."""

    id: int
    uid: str
    kind: str
    created: str
    kernel: str | None = None
    device: str | None = None
    mode: str | None = None
    engine: str | None = None
    dtype: str | None = None
    size: int | None = None
    verdict: str | None = None
    run_s: float | None = None
    execution: str | None = Field(None, description="real / emulated: whether the times are a chip's or this host's")
    tags: list[str] = Field(default_factory=list)
    environment: Environment | None = None
    document: dict[str, Any] | None = None

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> StoredResult:
        # Any keys: SQLAlchemy's RowMapping is typed as keyed by name or column; it iterates names
        data = dict(row)
        if isinstance(data.get("tags"), str):
            data["tags"] = [t for t in data["tags"].split(",") if t]
        data.pop("schema", None)
        return cls(**data)


class StoreExport(BaseModel):
    """``hwbench results export``'s file; ``results import`` reads it back (uids keep it idempotent)."""

    schema_: Literal["hwbench.store-export/1"] = Field("hwbench.store-export/1", alias="schema")
    records: list[StoredResult]

    model_config = {"populate_by_name": True}
