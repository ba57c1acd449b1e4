"""``hwbench results list | show | compare | export | import``: the history kept by the results store.

``compare --fail-above PCT`` is a regression gate: exit 1 (a check failed) when a configuration is
significantly slower by more than PCT percent, or an audit verdict got worse; 0 otherwise.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from hwbench.cli import validate
from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.core.errors import EXIT_CHECK_FAILED, EXIT_OK, UsageError
from hwbench.core.results import HOST_TIME

# the execution (real / emul.) under the device: a column of its own would not fit 80 columns piped
_LIST_COLUMNS = ["id", "created UTC", "kind", "kernel", "device (exec)", "engine", "dtype", "size", "min run s"]
_LIST_COLUMNS += ["verdict", "tags"]
_FILTERS = ("kind", "kernel", "device", "mode", "tag", "since", "until")


def _open(ctx: click.Context) -> Any:
    from hwbench.store.db import Store
    from hwbench.store.location import resolve_location

    location = resolve_location(ctx.obj.get("store_url"))
    if location is None:
        raise UsageError("the results store is off (HWBENCH_STORE=none): give --store URL")
    return Store(location)


def _date(value: str | None, name: str) -> str | None:
    if not value:
        return None
    try:
        _dt.datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--{name} expects an ISO date like 2026-01-31 or 2026-01-31T12:00, got '{value}'") from None
    return value


def filter_options(command: Any) -> Any:
    for name, help_text in reversed(
        (
            ("kind", "run, bench, audit, ..."),
            ("kernel", "Kernel name."),
            ("device", "Device name."),
            ("mode", "Device mode."),
            ("tag", "A tag given with --tag when recording."),
            ("since", "Created on/after this ISO date (UTC)."),
            ("until", "Created on/before this ISO date (UTC; a date includes the whole day)."),
        )
    ):
        command = click.option(f"--{name}", default=None, help=help_text)(command)
    return command


def _filters(limit: int | None, **kwargs: Any) -> Any:
    from hwbench.store.db import Filters

    for name in ("since", "until"):
        _date(kwargs.get(name), name)
    if limit is not None and limit < 0:
        raise UsageError("--limit must be >= 0 (0: all)")
    return Filters(limit=limit or None, **{k: kwargs.get(k) for k in _FILTERS})


@click.group()
@click.option("--store", "store_url", default=None, metavar="URL", help="Results store (default $HWBENCH_STORE).")
@click.pass_context
def results(ctx: click.Context, store_url: str | None) -> None:
    """Stored results: list, show, compare (with statistics; a regression gate), export, import."""
    ctx.obj = {**(ctx.obj or {}), "store_url": store_url}


@results.command("list")
@filter_options
@click.option("--limit", type=validate.BoundedInt(0, None), default=50, show_default=True, help="Newest N (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only on stdout.")
@click.pass_context
def list_results(ctx: click.Context, /, limit: int, as_json: bool, **filters: Any) -> None:
    """Stored results, newest first."""
    found = _open(ctx).list(_filters(limit, **filters))
    if as_json:
        print_json([r.model_dump(mode="json", exclude={"environment", "document"}) for r in found])
        return
    print_table(
        f"{len(found)} stored result(s)",
        _LIST_COLUMNS,
        [
            (r.id, r.created[:16].replace("T", " "), r.kind, r.kernel,
             " ".join(v for v in (r.device, f"[{r.mode}]" if r.mode else "", _exec(r.execution)) if v),
             r.engine, r.dtype, r.size,
             "" if r.run_s is None else f"{r.run_s:.4g}", r.verdict, ", ".join(r.tags))
            for r in found
        ],
        narrow=True,
    )  # fmt: skip
    if any("emulated" in (r.execution or "") for r in found):
        stdout.print(f"  exec emul.: the run times are {HOST_TIME}", highlight=False)


def _exec(execution: str | None) -> str:
    """``real``, ``emul.`` (or both) for a list row; empty for results stored before the column."""
    return (execution or "").replace("emulated", "emul.").replace(",", ", ")


@results.command()
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only on stdout.")
@click.pass_context
def show(ctx: click.Context, ref: str, as_json: bool) -> None:
    """One stored result: its figures, environment and document (REF: id or uid)."""
    result = _open(ctx).get(ref)
    if as_json:
        print_json(result)
        return
    env = result.environment
    stdout.print(f"[bold]result {result.id}[/bold] ({result.kind}, {result.created}) uid {result.uid}", highlight=False)
    fields = ("kernel", "device", "mode", "engine", "dtype", "size", "verdict", "run_s")
    rows = [(k, getattr(result, k)) for k in fields]
    rows.append(("tags", ",".join(result.tags)))
    if env is not None:
        rows += [("hwbench", env.hwbench_version), ("python", env.python), ("os", env.os)]
        rows += [("cpu", env.host.cpu if env.host else None), ("gpus", ", ".join(env.gpus) or "-")]
        rows += [("git", f"{env.git.revision} ({env.git.branch}) in {env.git.root}" if env.git else "-")]
        rows += [("libraries", ", ".join(f"{k} {v}" for k, v in env.libraries.items()))]
        rows += [(f"device {d.device}", f"mode {d.mode}, profile {d.profile} #{d.profile_hash}") for d in env.devices]
        rows += [("seeds", ", ".join(map(str, env.seeds)))]
    print_table("", ["field", "value"], rows)


@dataclass(frozen=True)
class _Pair:
    baseline: Any  # StoredResult
    candidate: Any


def _resolve_pair(store: Any, refs: tuple[str, ...], baseline_tag: str | None, filters: Any) -> _Pair:
    """(baseline, candidate): two refs; or the latest result tagged T, against a ref or the latest other."""
    from hwbench.store.db import Filters

    if baseline_tag is None:
        if len(refs) != 2:
            raise UsageError("compare needs two result ids (A B), or --baseline-tag T [B]")
        return _Pair(store.get(refs[0]), store.get(refs[1]))
    if len(refs) > 1:
        raise UsageError("with --baseline-tag, give at most one result id (the candidate; default: the latest)")
    base = store.latest(Filters(**{**filters.__dict__, "tag": baseline_tag}))
    if refs:
        return _Pair(base, store.get(refs[0]))
    newest = store.list(Filters(**{**filters.__dict__, "kind": base.kind, "tag": None, "limit": 2}))
    others = [r for r in newest if r.id != base.id]
    if not others:
        raise UsageError(f"no result newer than the baseline {base.id} (tag '{baseline_tag}') to compare with")
    return _Pair(base, store.get(others[0].id))


@results.command()
@click.argument("refs", nargs=-1)
@click.option("--baseline-tag", default=None, help="Baseline: the latest result with this tag; candidate: the latest.")
@filter_options
@click.option(
    "--fail-above",
    type=validate.FiniteFloat(0.0),
    default=None,
    metavar="PCT",
    help="Gate: exit 1 if significantly slower by > PCT %.",
)
@click.option(
    "--alpha",
    type=validate.FiniteFloat(0.0, 1.0, low_open=True, high_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the test.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON only on stdout.")
@click.pass_context
def compare(ctx: click.Context, /, refs: tuple[str, ...], baseline_tag: str | None, fail_above: float | None,
            alpha: float, as_json: bool, **filters: Any) -> int:  # fmt: skip
    """Compare B against baseline A: time ratios with 95% CIs and a test; accuracy deltas for audits.

    Exit 1 with --fail-above PCT when a regression is found (documented in docs/cli.md), else 0.
    """
    from hwbench.store.compare import compare_results

    if fail_above is not None and fail_above < 0:
        raise UsageError("--fail-above must be a percentage >= 0")
    store = _open(ctx)
    pair = _resolve_pair(store, refs, baseline_tag, _filters(None, **filters))
    report = compare_results(pair.baseline, pair.candidate, alpha=alpha, fail_above_pct=fail_above)
    if as_json:
        print_json(report)
    else:
        _render_comparison(report)
    return EXIT_CHECK_FAILED if fail_above is not None and report.regressions else EXIT_OK


_TESTS = {"mann-whitney-u": "U", "bootstrap-ci": "boot", "too-few-repeats": "-"}  # short names, spelt out below


def _ci(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _timing_row(t: Any) -> tuple[str, ...]:
    """One configuration of a comparison; its key's parts separated by spaces, so it wraps between them, then
    the execution of A and B (a column of its own would not fit 80 columns piped)."""
    p = "-" if t.p_value is None else f"{t.p_value:.3g}"
    return (f"{t.config.replace('|', ' ')} {_exec(t.execution)}".rstrip(), f"{t.baseline_n}/{t.candidate_n}",
            f"{t.baseline_median_s:.4g}", f"{t.candidate_median_s:.4g}", f"{t.ratio:.3f}", _ci(t.ci_low, t.ci_high),
            _TESTS.get(t.method, t.method), p, t.change + (" REGRESSION" if t.regression else ""))  # fmt: skip


def _render_comparison(report: Any) -> None:
    if report.timings:
        print_table(
            f"result {report.candidate} vs baseline {report.baseline} (matched on {report.matched_on})",
            ["configuration (exec A/B)", "n A/B", "A s", "B s", "B/A", "95% CI", "test", "p", "change"],
            [_timing_row(t) for t in report.timings],
            narrow=True,
        )
        used = sorted({t.method for t in report.timings if t.method in _TESTS})
        if used:
            tests = "; ".join(f"{_TESTS[m]} = {m}" for m in used)
            stdout.print(f"  A s, B s: median run time of baseline A and candidate B; test: {tests}", highlight=False)
        if any("emulated" in t.execution for t in report.timings):
            stdout.print(f"  exec emul.: that side's times are {HOST_TIME}", highlight=False)
        for note in sorted({t.note for t in report.timings if t.note}):
            stdout.print(f"  note: {note}", highlight=False)
    if report.accuracy:
        print_table(
            "accuracy (B - A)",
            ["protocol", "run", "max |dV| A", "max |dV| B", "delta", "matched A", "matched B", "delta"],
            [(a.protocol, a.label, a.max_dv_a, a.max_dv_b, a.max_dv_delta, a.matched_a, a.matched_b, a.matched_delta)
             for a in report.accuracy],
            narrow=True,
        )  # fmt: skip
    if report.verdicts:
        print_table(
            "verdicts",
            ["protocol", "device", "mode", "A", "B", ""],
            [(v.protocol, v.device, v.mode, v.verdict_a, v.verdict_b, "WORSE" if v.regression else "")
             for v in report.verdicts],
            narrow=True,
        )  # fmt: skip
    gate = "" if report.fail_above_pct is None else f" (gate: slower by > {report.fail_above_pct:g}%)"
    color = "red" if report.regressions else "green"
    stdout.print(f"[{color}]{report.regressions} regression(s){gate}[/{color}]", highlight=False)


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text)
    tmp.replace(path)


@results.command()
@filter_options
@click.option("--out", type=validate.OutFile(), required=True, help="Export file (.json).")
@click.pass_context
def export(ctx: click.Context, /, out: str, **filters: Any) -> None:
    """Write matching results (documents and environments) to one JSON file, for another store."""
    from hwbench.store.models import StoreExport

    records = _open(ctx).export(_filters(None, **filters))
    from hwbench.core.strict_json import dump_model

    _write_atomic(Path(out), dump_model(StoreExport(records=records), indent=1))
    stderr.print(f"wrote {len(records)} result(s) to {out}", highlight=False)


def _records_from(path: Path) -> list[Any]:
    """An export file, or one plain result file (run/bench/audit JSON) recorded without its environment."""
    from pydantic import ValidationError

    from hwbench.store.environment import Environment
    from hwbench.store.models import StoredResult, StoreExport

    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("hwbench."):
        raise UsageError(f"{path} is neither a hwbench export nor a hwbench result file (no 'schema')")
    try:
        if data["schema"] == "hwbench.store-export/1":
            return StoreExport.model_validate(data).records
    except ValidationError as exc:
        raise UsageError(f"{path}: malformed export: {exc.errors()[0]['msg']}") from None
    import hashlib

    uid = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]  # re-import: same uid
    created = str((data.get("provenance") or {}).get("created", ""))
    env = Environment(captured=False)
    return [StoredResult(id=0, uid=uid, kind="?", created=created, environment=env, document=data)]


@results.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--tag", "tags", multiple=True, help="Also tag the imported results.")
@click.pass_context
def import_results(ctx: click.Context, files: tuple[str, ...], tags: tuple[str, ...]) -> None:
    """Add results from export files or plain result JSON files; already-present ones are skipped."""
    store = _open(ctx)
    records = [r for f in files for r in _records_from(Path(f))]  # all files parse before anything is added
    for r in records:
        r.tags = sorted({*r.tags, *tags})
    summary = store.import_records(records)
    stderr.print(f"imported {len(summary.added)} result(s), skipped {summary.skipped} already present", highlight=False)


COMMANDS = [results]
