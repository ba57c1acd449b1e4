"""A user's JSON or TOML file read as data: what hwbench cannot hold is one UsageError naming the field.

Python's parsers accept what no hwbench file holds and what breaks the code after them: an
integer of 400 digits (an ``OverflowError`` where it meets a float or a database column, a
``ValueError`` past 4,300 digits), a float literal past the float range (``1e400`` silently becomes
infinity), and nesting deep enough to exhaust the interpreter's recursion (a ``RecursionError``).
:func:`parse_json` and :func:`parse_toml` read the text, then :func:`check_data` walks it (without
recursion) and refuses, naming the field: integers outside the signed 64-bit range, float literals
that overflow, and nesting deeper than :data:`MAX_DEPTH`. A bare ``Infinity`` / ``NaN`` (files
hwbench wrote before its JSON became strict) and TOML's ``inf`` / ``nan`` are values, not overflows.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hwbench.core.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MAX_DEPTH = 100
"""Nesting levels a user's file may have (hwbench's own files nest fewer than 15)."""
INT_LIMIT = 2**63 - 1
"""Integers outside [-2^63, 2^63 - 1] (64-bit signed, as SQLite, PostgreSQL and TOML hold them) are refused."""


_RANGE = f"numbers must fit 64 bits (integers from {-INT_LIMIT - 1} to {INT_LIMIT}, floats within +-1.8e308)"


class _Overflow(str):
    """A number literal that cannot be held: too many digits, or past the float range."""


def _parse_float(text: str) -> Any:
    value = float(text)
    if math.isfinite(value) or text.lstrip("+-").lower() in ("inf", "nan"):  # TOML spells them so
        return value
    return _Overflow(text)


def _parse_int(text: str) -> Any:
    return int(text) if len(text) <= 20 else _Overflow(text)  # 2^63 has 19 digits; 4,300+ would raise


def _shown(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"


def _path(path: str, key: object) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def check_data(data: Any, origin: str) -> None:
    """Refuse (UsageError naming the field) numbers hwbench cannot hold and nesting past :data:`MAX_DEPTH`."""
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise UsageError(f"{origin}: nested deeper than {MAX_DEPTH} levels; hwbench files nest far less")
        too_big = isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT - 1 <= value <= INT_LIMIT
        if isinstance(value, _Overflow) or too_big:
            raise UsageError(
                f"{origin}: {path or 'the top level'}: the number {_shown(str(value))} is out of range; {_RANGE}"
            )
        if isinstance(value, dict):
            stack += [(_path(path, k), v, depth + 1) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(_path(path, i), v, depth + 1) for i, v in enumerate(value)]


def _too_deep(origin: str) -> UsageError:
    return UsageError(f"{origin}: nested too deeply to read; hwbench files nest at most {MAX_DEPTH} levels")


def parse_json(text: str | bytes, origin: str) -> Any:
    """``text`` as JSON data, checked by :func:`check_data`; anything wrong is one UsageError."""
    try:
        data = json.loads(text, parse_float=_parse_float, parse_int=_parse_int)
    except RecursionError:
        raise UsageError(
            f"{origin}: nested too deeply to read; hwbench files nest at most {MAX_DEPTH} levels"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{origin}: not valid JSON ({' '.join(str(exc).split())})") from None
    check_data(data, origin)
    return data


def parse_toml(text: str, origin: str) -> dict[str, Any]:
    """``text`` as TOML data, checked by :func:`check_data`; anything wrong is one UsageError."""
    try:
        data = tomllib.loads(text, parse_float=_parse_float)
    except RecursionError:
        raise UsageError(
            f"{origin}: nested too deeply to read; hwbench files nest at most {MAX_DEPTH} levels"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{origin}: not valid TOML ({' '.join(str(exc).split())})") from None
    except ValueError:  # int() of more than 4,300 digits
        raise UsageError(f"{origin}: an integer of thousands of digits is out of range; {_RANGE}") from None
    check_data(data, origin)
    return data
