"""What the store indexes from a result document, kind by kind, from the JSON alone.

Working from the JSON (not the pydantic classes) lets the store accept results of kinds it does not
know (later issues' new kinds, or an older hwbench's files on import): unknown kinds get the generic
columns that their documents happen to carry.
"""

from __future__ import annotations

from typing import Any

BULK_FIELDS: dict[str, frozenset[str]] = {"run": frozenset({"traces", "spikes", "cell_annotations"})}
"""Per kind, fields left in the result file and not copied into the store (probe traces can be megabytes)."""


def kind_of(document: dict[str, Any]) -> str:
    """``hwbench.bench/1`` -> ``bench``; a document without a schema is refused by the caller."""
    schema = str(document.get("schema", ""))
    return schema.removeprefix("hwbench.").split("/", 1)[0]


def slim(kind: str, document: dict[str, Any]) -> dict[str, Any]:
    """The document as stored: bulky per-sample arrays dropped (they stay in the result file)."""
    bulk = BULK_FIELDS.get(kind, frozenset())
    return {k: v for k, v in document.items() if k not in bulk}


def _joined(values: list[Any]) -> str | None:
    seen = [str(v) for v in dict.fromkeys(v for v in values if v is not None)]
    return ",".join(seen) if seen else None


def timings_of(kind: str, document: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's timed configurations (a run's one, a bench's list), as JSON objects."""
    if kind == "run" and isinstance(document.get("timing"), dict):
        return [document["timing"]]
    if isinstance(document.get("timings"), list):
        return [t for t in document["timings"] if isinstance(t, dict)]
    return []


def _mapping(value: Any) -> dict[str, Any]:
    """``value`` if the document holds a mapping there, else an empty one (documents may be partial)."""
    return value if isinstance(value, dict) else {}


def execution_of(kind: str, document: dict[str, Any]) -> str | None:
    """``real``, ``emulated`` (or both, comma-joined): the timings' execution, or an audit's candidates'."""
    values = [t.get("execution") for t in timings_of(kind, document)]
    protocols = document.get("protocols")
    for p in protocols if isinstance(protocols, list) else []:
        runs = p.get("runs") if isinstance(p, dict) else None
        values += [r.get("execution") for r in runs or [] if isinstance(r, dict) and r.get("role") == "candidate"]
    return _joined([v for v in values if v in ("real", "emulated")])


def indexed_columns(kind: str, document: dict[str, Any]) -> dict[str, Any]:
    """The filterable columns: kernel, device, mode, engine, dtype, size, verdict, run_s (min over timings),
    execution."""
    timings = timings_of(kind, document)
    protocol = _mapping(document.get("protocol"))
    settings = _mapping(document.get("settings"))
    candidates = [c for c in settings.get("candidates", []) if isinstance(c, dict)]
    verdict = document.get("verdict")
    runs = [float(t["run_s"]) for t in timings if isinstance(t.get("run_s"), (int, float))]
    sizes = [int(t["ncells"]) for t in timings if isinstance(t.get("ncells"), int)]
    return {
        # audits name their kernel in settings.kernel (reports written before it existed have none)
        "kernel": _joined([t.get("kernel") for t in timings] + [protocol.get("kernel"), settings.get("kernel")]),
        "device": _joined([t.get("device") for t in timings] + [c.get("device") for c in candidates])
        or protocol.get("device"),
        "mode": _joined([t.get("mode") for t in timings] + [c.get("mode") for c in candidates]),
        "engine": _joined([t.get("engine") for t in timings]),
        "dtype": _joined([t.get("dtype") for t in timings]),
        "size": max(sizes) if sizes else None,
        "verdict": verdict if isinstance(verdict, str) else None,
        "run_s": min(runs) if runs else None,
        "execution": execution_of(kind, document),
    }


def config_key(timing: dict[str, Any]) -> str:
    """Identity of one timed configuration, matched across results by ``results compare``."""
    parts = ("kernel", "device", "mode", "engine", "dtype", "ncells", "connected")
    return "|".join(str(timing.get(p)) for p in parts)


def timing_rows(kind: str, document: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per timed configuration, with its repeat samples (the statistics' input)."""
    rows = []
    for i, t in enumerate(timings_of(kind, document)):
        samples = [float(s) for s in t.get("run_s_all") or [] if isinstance(s, (int, float))]
        rows.append(
            {
                "ordinal": i,
                "config": config_key(t)[:512],
                "engine": t.get("engine"),
                "dtype": t.get("dtype"),
                "ncells": t.get("ncells"),
                "connected": t.get("connected"),
                "run_s": t.get("run_s"),
                "us_per_step": t.get("us_per_step"),
                "samples": samples or ([float(t["run_s"])] if isinstance(t.get("run_s"), (int, float)) else []),
            }
        )
    return rows
