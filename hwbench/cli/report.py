"""``hwbench report``: one self-contained HTML page for a stored result, a result file, or a history."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import click

from hwbench.cli import validate
from hwbench.cli.command import Command
from hwbench.cli.output import stderr
from hwbench.cli.report_input import check_profiles, check_result, not_a_file, stored_ref
from hwbench.cli.results import _filters, _open, filter_options
from hwbench.core.errors import UsageError
from hwbench.store.location import MAX_LIMIT


def _from_file(path: Path) -> Any:
    from hwbench.core.user_data import parse_json
    from hwbench.library.recording import _devices
    from hwbench.report.html import ReportSource
    from hwbench.store.extract import kind_of

    try:
        text = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    doc = parse_json(text, f"cannot read {path}")
    if not isinstance(doc, dict) or not kind_of(doc):
        raise UsageError(f"{path} is not a hwbench result file (no 'schema'): give a result id, a .json, or 'history'")
    check_result(doc, kind_of(doc), str(path))
    profiles = _devices(doc).profiles
    note = "Profiles as this hwbench defines them today (a result file does not record them; stored results do)."
    images = {
        png.name: "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")
        for png in sorted(path.parent.glob("*.png"))[:12]  # the plots the command saved beside the file
    }
    return ReportSource(doc, kind_of(doc), f"file {path}", None, profiles, note, images)


def _from_store(ctx: click.Context, ref: str) -> Any:
    from hwbench.report.html import ReportSource

    stored = _open(ctx).get(ref)
    origin = f"stored result {stored.id}"
    check_result(stored.document or {}, stored.kind, origin)
    env = stored.environment.model_dump(mode="json") if stored.environment else None
    profiles = (env or {}).get("profiles") or {}
    check_profiles(profiles, origin)
    return ReportSource(stored.document or {}, stored.kind, origin, env, profiles)


@click.command(cls=Command)
@click.argument("target")
@click.option("--out", type=validate.OutFile(), default=None, help="HTML file (default hwbench-report-*.html).")
@click.option("--store", "store_url", default=None, metavar="URL", help="Results store (default $HWBENCH_STORE).")
@filter_options
@click.option(
    "--limit",
    type=validate.BoundedInt(0, MAX_LIMIT),
    default=500,
    show_default=True,
    help="History: newest N results (0: all).",
)
@click.pass_context
def report(
    ctx: click.Context, /, target: str, out: str | None, store_url: str | None, limit: int, **filters: Any
) -> None:
    """Write one self-contained HTML page (plots embedded, no external resources).

    TARGET: a stored result id (see 'hwbench results list'), a result .json file (run, bench,
    audit), or 'history' for the stored results matching the filters, over time.
    """
    from hwbench.report.html import render_history, render_result, write_page

    ctx.obj = {**(ctx.obj or {}), "store_url": store_url}
    if target == "history":
        store, chosen = _open(ctx), _filters(limit, **filters)
        records = list(reversed(store.list(chosen)))
        if not records:
            raise UsageError("no stored result matches those filters (see 'hwbench results list')")
        described = ", ".join(f"{k}={v}" for k, v in filters.items() if v)
        text, name = render_history(records, store.timing_history(chosen), described), "history"
    elif Path(target).is_file():
        source = _from_file(Path(target))
        text, name = render_result(source), Path(target).stem
    elif stored_ref(target):
        source = _from_store(ctx, target)
        text, name = render_result(source), f"{source.kind}-{target}"
    else:
        raise not_a_file(Path(target))
    path = write_page(text, out or f"hwbench-report-{name}.html")
    stderr.print(f"wrote {path}", highlight=False)


COMMANDS = [report]
