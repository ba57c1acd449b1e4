"""``hwbench devices | kernels | metrics | engines | plugins | protocols``: what is registered, and why."""

from __future__ import annotations

from typing import Any

import click

from hwbench.cli.command import Command
from hwbench.cli.device_view import device_record, numerics_cells, show_device
from hwbench.cli.output import print_json, print_table, warn
from hwbench.core.metric import Metric
from hwbench.core.plugins import Registry, get_registry

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON only on stdout.")


def _warn_failed(registry: Registry) -> None:
    failed = registry.failed
    if failed:
        names = ", ".join(p.name for p in failed)
        warn(f"{len(failed)} plugin(s) failed to load: {names} (see 'hwbench plugins')")


@click.command(cls=Command)
@click.argument("name", required=False)
@json_option
def devices(name: str | None, as_json: bool) -> None:
    """List devices: real, emulated or unavailable here, and why; the default mode's numerics
    profile (weakest confidence) and its knobs. NAME: one device in detail, every mode's profile."""
    registry = get_registry()
    if name is not None:
        show_device(registry.device(name), as_json)
        _warn_failed(registry)
        return
    if as_json:
        print_json([device_record(d) for d in registry.devices.values()])
    else:
        rows = []
        for device in registry.devices.values():
            r = device_record(device, profiles=False)
            rows.append((r["name"], r["status"], ", ".join(r["modes"]), *numerics_cells(device), r["reason"]))
        print_table(
            "Devices (hwbench devices NAME: one in full, with its chip, sources and every mode's profile)",
            ["name", "status", "modes", "profile (default mode)", "knobs (--set)", "why"],
            rows,
        )
    _warn_failed(registry)


@click.command(cls=Command)
@json_option
def kernels(as_json: bool) -> None:
    """List kernels and the op classes they use."""
    registry = get_registry()
    records = [k.info.model_dump(mode="json") for k in registry.kernels.values()]
    if as_json:
        print_json(records)
    else:
        print_table(
            "Kernels",
            ["name", "family", "state", "probe", "summary"],
            [(r["name"], r["family"], len(r["state_names"]), r["probe"], r["summary"]) for r in records],
        )
    _warn_failed(registry)


@click.command(cls=Command)
@json_option
def protocols(as_json: bool) -> None:
    """List the audit protocols: what each needs, compares and judges, and the kernels it applies to."""
    registry = get_registry()
    records = []
    for protocol in registry.protocols.values():
        applies = [k for k, kernel in registry.kernels.items() if protocol.refusal(kernel) is None]
        records.append({**protocol.info.model_dump(mode="json"), "kernels": applies})
    if as_json:
        print_json(records)
    else:
        print_table(
            "Protocols (audit)",
            ["name", "kernels", "compares", "summary"],
            [
                (r["name"], ", ".join(r["kernels"]) or "-", ", ".join(c["header"] for c in r["compares"]), r["summary"])
                for r in records
            ],
        )
    _warn_failed(registry)


def metric_record(metric: Metric, registry: Registry) -> dict[str, Any]:
    """What ``hwbench metrics --json`` says about one metric, with the kernels it applies to here."""
    record = metric.info.model_dump(mode="json")
    record["applies_to"] = [k.name for k in registry.kernels.values() if metric.applies_to(k)]
    return record


@click.command(cls=Command)
@click.argument("name", required=False)
@json_option
def metrics(name: str | None, as_json: bool) -> None:
    """Describe metrics: definition, unit, source, and the kernels each applies to (NAME: one in full)."""
    from hwbench.core.errors import unknown_name

    registry = get_registry()
    if name is not None and name not in registry.metrics:
        raise unknown_name("metric", name, registry.metrics)
    chosen = [registry.metrics[name]] if name else list(registry.metrics.values())
    records = [metric_record(m, registry) for m in chosen]
    if as_json:
        print_json(records[0] if name else records)
    elif name:
        r = records[0]
        fields = ("kind", "unit", "summary", "definition", "source", "requires", "applies_to")
        rows = [(f, ", ".join(r[f]) if isinstance(r[f], list) else r[f]) for f in fields]
        print_table(f"Metric {name}", ["field", "value"], rows)
    else:
        print_table(
            "Metrics (hwbench metrics NAME for one in full)",
            ["name", "kind", "unit", "applies to", "definition", "source"],
            [
                (
                    r["name"],
                    r["kind"],
                    r["unit"],
                    ", ".join(r["applies_to"]) or "-",
                    r["definition"] or r["summary"],
                    r["source"],
                )
                for r in records
            ],
        )
    _warn_failed(registry)


@click.command(cls=Command)
@json_option
def engines(as_json: bool) -> None:
    """List execution engines and whether their library is installed here."""
    registry = get_registry()
    records: list[dict[str, Any]] = []
    for engine in registry.engines.values():
        ok, reason = engine.available()
        records.append(
            {
                "name": engine.name,
                "available": ok,
                "reason": reason,
                "dtypes": list(engine.dtypes),
                "summary": engine.summary,
            }
        )
    if as_json:
        print_json(records)
    else:
        print_table(
            "Engines",
            ["name", "available", "dtypes", "summary / why not"],
            [
                (
                    r["name"],
                    "yes" if r["available"] else "no",
                    ", ".join(r["dtypes"]),
                    r["summary"] if r["available"] else r["reason"],
                )
                for r in records
            ],
        )
    _warn_failed(registry)


@click.command(cls=Command)
@json_option
def plugins(as_json: bool) -> None:
    """List plugins (built-in and installed), what each registered, and failures."""
    registry = get_registry()
    records = [p.as_dict() for p in registry.plugins]
    if as_json:
        print_json(records)
        return
    rows = []
    for r in records:
        provided = "; ".join(f"{k}: {', '.join(v)}" for k, v in r["provides"].items())
        origin = r["source"] if not r["distribution"] else f"{r['distribution']} {r['version']}"
        contract = "-" if r["contract"] is None else str(r["contract"])
        remarks = "; ".join([r["error"]] if r["error"] else []) or "; ".join(r["notes"])
        rows.append((r["name"], origin, r["status"], contract, provided or "-", remarks))
    print_table("Plugins", ["name", "from", "status", "contract", "provides", "error / notes"], rows)


@click.command(cls=Command)
@click.argument("name", required=False)
def schema(name: str | None) -> None:
    """Print the published JSON Schema of a result file (run, bench, audit, profile, sweep)."""
    from pydantic import BaseModel

    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.accuracy.report import AuditReport
    from hwbench.core.errors import unknown_name
    from hwbench.core.results import SCHEMAS
    from hwbench.stress.sensitivity import SweepResult

    schemas: dict[str, type[BaseModel]] = {
        **SCHEMAS,
        "audit": AuditReport,
        "profile": NumericsProfile,
        "sweep": SweepResult,
    }
    if name is None:
        print_json(sorted(schemas))
        return
    if name not in schemas:
        raise unknown_name("schema", name, schemas)
    from hwbench.core.strict_json import json_schema

    print_json(json_schema(schemas[name]))


COMMANDS = [devices, kernels, metrics, engines, plugins, schema, protocols]
