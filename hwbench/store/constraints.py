"""What a row must satisfy to be stored, checked before anything is inserted.

A result hwbench records itself fits its columns. An imported export is the user's file: an
integer past the column's range (64 bits in SQLite, 32 in PostgreSQL), text where a number
belongs, and in PostgreSQL a uid, tag or name longer than its column or a NUL character would fail
inside the database halfway through an import (a ``DataError``, or Python's ``OverflowError`` on
the way in). :func:`check_row` says which record and which column instead, and the import then
writes nothing. The checks are the target database's own: SQLite keeps text of any length, so a
SQLite store imports what it always could.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Float, Integer, String, Table

from hwbench.core.errors import UsageError

INTEGER_RANGE = {"postgresql": 2**31 - 1}  # an INTEGER column's largest value; SQLite's are 64-bit
SQLITE_INTEGER = 2**63 - 1


def integer_max(dialect: str) -> int:
    """The largest value of an INTEGER column (result ids among them) in ``dialect``."""
    return INTEGER_RANGE.get(dialect, SQLITE_INTEGER)


def _problem(column: Any, value: Any, dialect: str) -> str | None:
    """Why ``value`` cannot go into ``column`` (None: it can)."""
    kind = column.type
    if isinstance(kind, String):
        if not isinstance(value, str):
            return f"must be text, got {type(value).__name__}"
        if dialect == "postgresql" and kind.length is not None and len(value) > kind.length:
            return f"is {len(value)} characters long; a PostgreSQL store keeps at most {kind.length}"
        if dialect == "postgresql" and "\x00" in value:
            return "holds a NUL character, which PostgreSQL's text cannot"
    elif isinstance(kind, Boolean):
        if not isinstance(value, bool):
            return f"must be true or false, got {value!r:.40}"
    elif isinstance(kind, Integer):
        top = integer_max(dialect)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, got {value!r:.40}"
        if not -top - 1 <= value <= top:
            return f"is {value}, outside the column's range -{top + 1}..{top}"
    elif isinstance(kind, Float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"must be a number, got {value!r:.40}"
    return None


def check_row(table: Table, row: dict[str, Any], where: str, dialect: str) -> None:
    """Refuse (UsageError naming ``where`` and the column) a value ``table`` cannot hold."""
    for column in table.columns:
        value = row.get(column.name)
        if value is None:
            continue
        problem = _problem(column, value, dialect)
        if problem is not None:
            raise UsageError(f"{where}: {table.name}.{column.name} {problem}")
