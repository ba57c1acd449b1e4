"""Strict RFC 8259 JSON for everything hwbench writes (stdout ``--json``, files, exports, the store).

RFC 8259 has no Infinity or NaN, and ``jq``, JavaScript's ``JSON.parse`` and most libraries reject
the ``Infinity`` that Python's ``json`` writes by default (a FAIL verdict's score is infinite). So a
non-finite number is written as one of the strings in :data:`NONFINITE`, the convention pydantic's
``ser_json_inf_nan='strings'`` uses: the result models read them back as floats, and the published
schemas (``hwbench schema``) state it for every number field. Files written before this rule, with a
bare ``Infinity``, still load: Python's parser and pydantic accept the old form.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

NONFINITE = ("Infinity", "-Infinity", "NaN")
"""How a non-finite number is written: +inf, -inf, nan."""


def nonfinite_name(value: float) -> str:
    """The string :data:`NONFINITE` writes for a non-finite ``value``."""
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def dumps(data: Any, *, indent: int | None = None, fallback: Callable[[Any], Any] | None = str) -> str:
    """``data`` as strict JSON text (non-finite floats as strings; unknown objects through ``fallback``)."""
    return to_json(data, indent=indent, inf_nan_mode="strings", fallback=fallback).decode()


def finite_or_named(data: Any) -> Any:
    """``data`` (JSON-able lists, dicts, scalars) with every non-finite float replaced by its name."""
    if isinstance(data, float):
        return data if math.isfinite(data) else nonfinite_name(data)
    if isinstance(data, dict):
        return {k: finite_or_named(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [finite_or_named(v) for v in data]
    return data


def dumps_compact(data: Any) -> str:
    """As :func:`dumps`, in Python's ``json.dumps`` layout (``", "`` separators): the store's columns
    keep the text they always had, apart from the non-finite numbers."""
    return json.dumps(finite_or_named(data), allow_nan=False, default=str)


def dump_model(model: BaseModel, *, indent: int | None = None, by_alias: bool = True, **kwargs: Any) -> str:
    """A pydantic model as strict JSON, laid out as its ``model_dump_json`` would be (``kwargs``:
    ``model_dump``'s, e.g. ``exclude_none``).

    Dumped in python mode first: pydantic's own JSON mode writes a non-finite float held in an
    ``Any`` field (a trace in a violation record) as null, and a typed one per the model's config,
    so the two would disagree; here every non-finite number becomes its :data:`NONFINITE` name.
    """
    data = model.model_dump(mode="python", by_alias=by_alias, **kwargs)
    return dumps(data, indent=indent)


def jsonable(model: BaseModel, **kwargs: Any) -> Any:
    """The model as the plain data its strict JSON holds (a store column, a ``--json`` document)."""
    return json.loads(dump_model(model, **kwargs))


def _refuse(token: str) -> Any:
    raise ValueError(f"non-standard JSON constant {token} (RFC 8259 has no Infinity or NaN)")


def loads_strict(text: str | bytes) -> Any:
    """Parse ``text`` as RFC 8259 JSON only: a bare Infinity/NaN raises ValueError (for tests and
    readers that must reject what other tools would)."""
    return json.loads(text, parse_constant=_refuse)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s published JSON Schema, where every number field also admits the strings of
    :data:`NONFINITE` (how this module writes a non-finite value), and the top says so."""
    from pydantic.json_schema import GenerateJsonSchema

    class _Strict(GenerateJsonSchema):
        def float_schema(self, schema: Any) -> dict[str, Any]:
            number = super().float_schema(schema)
            return {"anyOf": [number, {"enum": list(NONFINITE), "description": "a non-finite number"}]}

    out = model.model_json_schema(by_alias=True, schema_generator=_Strict)
    out["$comment"] = (
        "RFC 8259 JSON: a non-finite number is written as the string 'Infinity', '-Infinity' or 'NaN'; "
        "files written before this rule may hold a bare Infinity, which hwbench still reads."
    )
    return out
