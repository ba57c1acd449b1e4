"""Build the HTML page: verdict and reasons first, then tables and plots, profile assumptions with their
sources, and the environment. Every value is escaped; nothing is loaded from outside the page.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwbench import __version__
from hwbench.core.results import HOST_TIME
from hwbench.report import charts

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:70em;color:#222;
padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}td,th{border:1px solid #ccc;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f3f3f3}.verdict{font-size:1.3em;font-weight:bold;padding:.6em 1em;
border-radius:.3em;margin:1em 0}.PASS{background:#d9f2d9;color:#14521b}.WARN{background:#fff1c2;color:#6b4e00}
.FAIL{background:#f8d0d0;color:#7a1010}.NONE{background:#e8eef7;color:#203a60}img{max-width:100%}
.muted{color:#666;font-size:.85em}pre{background:#f7f7f7;padding:.5em;overflow:auto;font-size:.8em}
td.num{text-align:right;font-variant-numeric:tabular-nums}
"""


@dataclass
class ReportSource:
    """What a page is made from: the result document and what the store knows about it."""

    document: dict[str, Any]
    kind: str
    origin: str
    environment: dict[str, Any] | None = None
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    profiles_note: str = ""
    images: dict[str, str] = field(default_factory=dict)  # name -> data URI: plots saved beside a result file


def esc(value: Any) -> str:
    if isinstance(value, float):
        return html.escape(f"{value:.4g}")
    return html.escape("" if value is None else str(value))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def section(title: str, body: str) -> str:
    return f"<section><h2>{esc(title)}</h2>{body}</section>"


def image(uri: str, alt: str) -> str:
    return f'<img src="{uri}" alt="{esc(alt)}">'


def verdict_banner(verdict: str | None, reasons: list[str]) -> str:
    if verdict is None:
        return '<div id="verdict" class="verdict NONE">Measurement: no verdict (performance results)</div>'
    items = "".join(f"<li>{esc(r)}</li>" for r in reasons)
    return f'<div id="verdict" class="verdict {esc(verdict)}">Overall verdict: {esc(verdict)}</div><ul>{items}</ul>'


def _timing_rows(timings: list[dict[str, Any]]) -> str:
    headers = ["engine", "dtype", "execution", "connected", "cells", "setup s", "run s (min)", "repeats", "us/step"]
    headers.append("RTF")
    rows = [
        (t.get("engine"), t.get("dtype"), t.get("execution"), t.get("connected"), t.get("ncells"), t.get("setup_s"),
         t.get("run_s"), len(t.get("run_s_all") or []), t.get("us_per_step"), t.get("rtf"))
        for t in timings
    ]  # fmt: skip
    return table(headers, rows)


def host_time_note(rows: Iterable[dict[str, Any]], what: str = "times") -> str:
    """The sentence that says whose an emulated time is, where any of ``rows`` is emulated; else ''."""
    if not any(r.get("execution") == "emulated" for r in rows):
        return ""
    return f"<p class='muted'>Execution 'emulated': the {esc(what)} are {esc(HOST_TIME)}.</p>"


def published_speed(timings: list[dict[str, Any]]) -> str:
    """The real chip's speed as a study published it for these configurations, with the source."""
    rows = [
        (t.get("device"), f"{t.get('ncells')} cells {'connected' if t.get('connected') else 'unconnected'}",
         f"{p.get('figure'):g} {p.get('unit')}", p.get("workload"), p.get("source"))
        for t in timings for p in t.get("published") or [] if isinstance(p.get("figure"), (int, float))
    ]  # fmt: skip
    if not rows:
        return ""
    unique = list(dict.fromkeys(rows))
    return "<h3>Published for the real chip</h3>" + table(
        ["device", "configuration", "figure", "what was measured", "source"], unique
    )


def timing_sections(doc: dict[str, Any]) -> list[str]:
    """bench (and run) pages: the timing table and run time versus size, one line per configuration."""
    timings = [doc["timing"]] if isinstance(doc.get("timing"), dict) else list(doc.get("timings") or [])
    if not timings:
        return []
    groups: dict[str, list[dict[str, Any]]] = {}
    for t in timings:
        label = f"{t.get('device')} {t.get('mode')} {t.get('engine')} {t.get('dtype')}"
        label += (" connected" if t.get("connected") else " unconnected") + f" ({t.get('execution')})"
        groups.setdefault(label, []).append(t)
    series = [
        charts.Series(label, [t["ncells"] for t in ts], [t["run_s"] for t in ts])
        for label, ts in sorted(groups.items())
        for ts in [sorted(ts, key=lambda t: t["ncells"])]
    ]
    sim = (doc.get("protocol") or {}).get("simulated_ms") or timings[0].get("simulated_ms")
    plot = charts.line_chart(
        series, title="run time versus size", xlabel="cells", ylabel=f"wall s per {sim} ms simulated", logx=True
    )
    body = _timing_rows(timings) + host_time_note(timings) + published_speed(timings)
    out = [section("Timings", body), section("Run time versus size", image(plot, "run time plot"))]
    skipped = doc.get("skipped") or []
    if skipped:
        rows = [(s.get("ncells"), s.get("reason")) for s in skipped]
        out.append(section("Skipped configurations", table(["cells", "reason"], rows)))
    return out


def trace_sections(doc: dict[str, Any]) -> list[str]:
    """run pages from a result file: the probed signal of the first cells over time."""
    traces, dt = doc.get("traces") or [], doc.get("sample_interval_ms")
    if not traces or not isinstance(dt, (int, float)):
        return []
    cells = doc.get("probe_cells") or list(range(len(traces[0])))
    times = [i * dt for i in range(len(traces))]
    series = [charts.Series(f"cell {c}", times, [row[j] for row in traces]) for j, c in enumerate(cells[:8])]
    probe = str(doc.get("probe"))
    uri = charts.line_chart(series, title=f"probe {probe}", xlabel="ms", ylabel=probe, logy=False)
    return [section("Probed traces (first 8 cells)", image(uri, "trace plot"))]


def _run_row(r: dict[str, Any]) -> tuple[Any, ...]:
    dev, spk = r.get("deviation") or {}, r.get("spikes") or {}
    return (r.get("label"), r.get("role"), r.get("execution"), r.get("profile"), dev.get("max"),
            dev.get("max_outside_spikes"), spk.get("matched_fraction"), "yes" if r.get("violation") else "",
            r.get("run_s"))  # fmt: skip


def deviation_bars(runs: list[dict[str, Any]]) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """Each run's max |dV| (positive, finite), and the runs that diverged instead (no finite maximum,
    or a hard-check violation), each with when: the failing device stays in its own picture."""
    devs, diverged = [], {}
    for r in runs:
        v, violation = (r.get("deviation") or {}).get("max"), r.get("violation") or {}
        finite = isinstance(v, (int, float)) and math.isfinite(v)
        if violation or (r.get("deviation") and not finite):
            t_ms = violation.get("t_ms")
            when = f"at t = {t_ms / 1000:.5g} s" if isinstance(t_ms, (int, float)) else "(no finite deviation)"
            diverged[str(r.get("label"))] = f"diverged {when}"
        elif isinstance(v, (int, float)) and finite and v > 0:
            devs.append((str(r.get("label")), float(v)))
    return devs, diverged


def divergence_traces(run: dict[str, Any], unit: str) -> str:
    """The probe of the cell the forensics name, around the first violation: reference, fp64 gold and
    the candidate (``violation["traces"]``, which audits record)."""
    violation = run.get("violation") or {}
    excerpt = violation.get("traces")
    if not isinstance(excerpt, dict) or not excerpt.get("t_ms"):
        return ""
    t_violation, series = violation.get("t_ms"), excerpt_series(excerpt)
    title = f"{run.get('label')}: first divergence, cell {excerpt.get('cell')}"
    ylabel = f"{excerpt.get('probe')} {unit}".strip()
    if isinstance(t_violation, (int, float)) and series and series[0].label == "reference":
        uri = charts.divergence_chart(series, t_violation=float(t_violation), title=title, ylabel=ylabel)
    else:
        uri = charts.line_chart(series, title=title, xlabel="biological time (ms)", ylabel=ylabel, logy=False,
                                vline=t_violation)  # fmt: skip
    note = f"<p>{esc(violation.get('explanation') or '')}</p>"
    return f"<h3>First divergence: {esc(run.get('label'))}</h3>{note}" + image(uri, "first divergence traces")


def excerpt_series(excerpt: dict[str, Any]) -> list[charts.Series]:
    """The runs of a violation's trace excerpt as chart series, the reference first (the others' baseline)."""
    found = dict(excerpt.get("series", {}))
    ordered = {k: found.pop(k) for k in ("reference",) if k in found} | found
    return [charts.Series(label, excerpt["t_ms"], [_num(y) for y in ys]) for label, ys in ordered.items()]


def _num(value: Any) -> float:
    """A trace value as written (a float, or 'NaN'/'Infinity' in strict JSON) as a float."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def audit_sections(doc: dict[str, Any]) -> list[str]:
    """audit pages: per protocol the runs, the candidates' verdicts with reasons, and max |dV| per run."""
    out = []
    for p in doc.get("protocols", []):
        runs = p.get("runs", [])
        unit = p.get("probe_unit", "mV")  # reports written before the field: io-ehh's mV
        headers = ["run", "role", "execution", "profile", f"max |dV| {unit}".rstrip()]
        headers += [f"outside spikes {unit}".rstrip(), "matched", "hard check", "s"]
        verdicts = table(
            ["device", "mode", "verdict", "score", "reasons"],
            [
                (v["device"], v["mode"], v["verdict"], v.get("score"), "; ".join(v.get("reasons", [])))
                for v in p.get("verdicts", [])
            ],
        )
        body = f"<p>{esc(p.get('description'))} <span class='muted'>{esc(p.get('reduced') or '')}</span></p>"
        body += f"<p>regime: {esc(p.get('regime'))}; protocol verdict: <b>{esc(p.get('verdict'))}</b></p>"
        body += verdicts + table(headers, [_run_row(r) for r in runs])
        body += host_time_note(runs, "run times (s)") + native_parts(runs)
        devs, diverged = deviation_bars(runs)
        if devs or diverged:
            ylabel = f"max |dV| versus the CPU fp32 reference ({unit or 'probe units'}, log)"
            uri = charts.bar_chart([d[0] for d in devs], [d[1] for d in devs], title=f"{p['name']}: max |dV| per run",
                                   ylabel=ylabel, diverged=diverged)  # fmt: skip
            body += image(uri, f"{p['name']} deviation plot")
        body += "".join(divergence_traces(r, unit) for r in runs)
        body += metric_table(runs)
        out.append(section(f"Protocol {p.get('name')}", body))
    return out


def native_parts(runs: list[dict[str, Any]]) -> str:
    """What the emulated runs computed natively by design (``RunSummary.native``), once per device mode."""
    seen: dict[str, list[str]] = {}
    for r in runs:
        if r.get("native"):
            seen.setdefault(f"{r.get('device')} [{r.get('mode')}]", list(r["native"]))
    return "".join(
        f"<p>Not emulated in {esc(name)}, by design:</p><ul>" + "".join(f"<li>{esc(p)}</li>" for p in parts) + "</ul>"
        for name, parts in seen.items()
    )


def metric_table(runs: list[dict[str, Any]]) -> str:
    """The kernel's metrics of every run (synaptic events/s, NeuroBench's, energy where metered): one row per
    run, one column per value of the registered run metrics (``performance``, ``static``, ``workload``,
    ``energy``) the runs carry, headed by the metric, the value and its unit."""
    from hwbench.core.metric import RUN_KINDS
    from hwbench.core.plugins import get_registry

    infos = {name: m.info for name, m in get_registry().metrics.items() if m.info.kind in RUN_KINDS}
    columns: dict[tuple[str, str], str] = {}  # (metric, value) -> unit, in the order the runs name them
    for r in runs:
        for name, values in (r.get("metrics") or {}).items():
            if name in infos and isinstance(values, dict):
                for key, v in values.items():
                    if isinstance(v, (int, float)):
                        columns.setdefault((name, key), infos[name].unit_of(key))
    if not columns:
        return ""
    rows = "".join(
        f"<tr><td>{esc(r.get('label'))}</td><td>{esc(r.get('execution'))}</td>"
        + "".join(f"<td class='num'>{_number_cell((r.get('metrics') or {}).get(n), k)}</td>" for n, k in columns)
        + "</tr>"
        for r in runs
    )
    table_html = f"<table class='metrics'>{_metric_head(columns)}<tbody>{rows}</tbody></table>"
    return "<h3>Kernel metrics per run</h3>" + table_html + host_time_note(runs, "performance figures")


def _metric_head(columns: dict[tuple[str, str], str]) -> str:
    """Two header rows: each metric over its values, then each value with its unit."""
    spans = {name: sum(1 for n, _ in columns if n == name) for name, _ in columns}
    top = "<th rowspan='2'>run</th><th rowspan='2'>execution</th>"
    top += "".join(f"<th colspan='{n}'>{esc(name)}</th>" for name, n in spans.items())
    sub = "".join(f"<th>{esc(key)}{f' ({esc(unit)})' if unit else ''}</th>" for (_, key), unit in columns.items())
    return f"<thead><tr>{top}</tr><tr>{sub}</tr></thead>"


def _number_cell(values: Any, key: str) -> str:
    value = values.get(key) if isinstance(values, dict) else None
    return esc(value) if isinstance(value, (int, float)) else ""


def profile_sections(source: ReportSource) -> list[str]:
    """The numerics profiles the emulated devices ran under: every assumption with its source."""
    out = []
    for digest, prof in sorted(source.profiles.items()):
        rows = [
            (op, spec.get("format") if isinstance(spec.get("format"), str) else json.dumps(spec.get("format")),
             spec.get("rounding"), spec.get("input_format"), spec.get("confidence"), spec.get("source"))
            for op, spec in sorted((prof.get("ops") or {}).items())
        ]  # fmt: skip
        body = f"<p>{esc(prof.get('description'))} <span class='muted'>profile hash {esc(digest)}</span></p>"
        body += table(["op class", "format", "rounding", "input format", "confidence", "source"], rows)
        if prof.get("parameters"):
            body += table(["parameter", "value"], sorted(prof["parameters"].items()))
        body += "".join(f"<p class='muted'>{esc(n)}</p>" for n in prof.get("notes") or [])
        title = f"Profile assumptions: {prof.get('name')} ({prof.get('device')} {prof.get('mode')})"
        out.append(section(title, body))
    if out and source.profiles_note:
        out.insert(0, f"<p class='muted'>{esc(source.profiles_note)}</p>")
    return out


def environment_section(env: dict[str, Any] | None) -> list[str]:
    if not env:
        return []
    host = env.get("host") or {}
    git = env.get("git") or {}
    where = f"{git.get('revision')} ({git.get('branch')}) in {git.get('root')}" if git else "not in a checkout"
    rows = [("hwbench", env.get("hwbench_version")), ("python", env.get("python")), ("os", env.get("os")),
            ("cpu", f"{host.get('cpu')} ({host.get('cores')} cores) on {host.get('hostname')}"),
            ("gpus", ", ".join(env.get("gpus") or []) or "none found"), ("memory bytes", env.get("memory_bytes")),
            ("git", where),
            ("libraries", ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items())),
            ("seeds", ", ".join(map(str, env.get("seeds") or [])))]  # fmt: skip
    rows += [(f"device {d.get('device')}", f"mode {d.get('mode')}, {d.get('execution') or ''} profile "
              f"{d.get('profile')} #{d.get('profile_hash')}") for d in env.get("devices") or []]  # fmt: skip
    if env.get("captured") is False:
        rows.insert(0, ("note", "imported without its environment"))
    return [section("Environment", table(["", ""], rows))]


def page(title: str, subtitle: str, parts: list[str]) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{esc(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{esc(title)}</h1><p class='muted'>{esc(subtitle)}</p>"
        + "".join(parts)
        + f"<footer><p class='muted'>hwbench {esc(__version__)} report, generated {esc(stamp)}</p></footer>"
        + "</body></html>"
    )


def _result_parts(source: ReportSource) -> list[str]:
    """The sections of one result's page, banner first."""
    doc = source.document
    verdict = doc.get("verdict") if source.kind == "audit" else None
    parts = [verdict_banner(verdict, list(doc.get("reasons") or []))]
    if source.kind == "audit":
        parts += audit_sections(doc)
        settings = doc.get("settings") or {}
        parts.append(section("Settings", f"<pre>{esc(json.dumps(settings, indent=1, default=str))}</pre>"))
    parts += timing_sections(doc) + trace_sections(doc)
    parts += [section(f"Plot {name}", image(uri, name)) for name, uri in sorted(source.images.items())]
    if source.kind not in ("audit", "bench", "run"):
        parts.append(section("Document", f"<pre>{esc(json.dumps(doc, indent=1, default=str)[:200_000])}</pre>"))
    return parts + profile_sections(source) + environment_section(source.environment)


def render_result(source: ReportSource) -> str:
    """One page for one result: audit, bench, run, or any later kind (shown as its JSON)."""
    doc = source.document
    prov = doc.get("provenance") or {}
    subtitle = f"{source.origin}; {doc.get('schema')}; created {prov.get('created')}"
    subtitle += f"; hwbench {prov.get('hwbench_version')}"
    return page(f"hwbench {source.kind} report", subtitle, _result_parts(source))


def _scoped_css(scope: str) -> str:
    """The page's style sheet with every selector limited to ``scope`` (``body`` becomes ``scope``)."""
    rules = []
    for rule in _CSS.replace("\n", "").split("}"):
        selectors, _, body = rule.partition("{")
        if body:
            scoped = [scope if sel.strip() == "body" else f"{scope} {sel.strip()}" for sel in selectors.split(",")]
            rules.append(",".join(scoped) + "{" + body + "}")
    return "".join(rules)


def render_fragment(source: ReportSource) -> str:
    """One result's sections as an HTML fragment with the page's styles (a notebook's output cell)."""
    css = _scoped_css(".hwbench-report")  # the page's rules, kept to the fragment (not the notebook's page)
    return f"<div class='hwbench-report'><style>{css}</style>" + "".join(_result_parts(source)) + "</div>"


def render_history(records: list[Any], points: list[Any], filters: str) -> str:
    """One page for a history: each timed configuration's minimum run time over time, and the results."""
    groups: dict[str, list[Any]] = {}
    for point in points:
        groups.setdefault(f"{point.config} ({point.execution or 'execution not recorded'})", []).append(point)
    when = _dt.datetime.fromisoformat
    series = [
        charts.Series(label.replace("|", " "), [when(q.created) for q in ps], [q.run_s for q in ps])
        for label, ps in sorted(groups.items())
    ]
    audits = [r for r in records if r.verdict]
    latest = audits[-1] if audits else None
    reasons = [f"latest audit: result {latest.id}"] if latest else []
    parts = [verdict_banner(latest.verdict if latest else None, reasons)]
    if series:
        uri = charts.line_chart(
            series[:12], xlabel="created (UTC)", ylabel="run s (min of repeats)",
            title="minimum run time over time\n(kernel device mode engine dtype cells connected, execution)"
        )  # fmt: skip
        parts.append(section("History", image(uri, "history plot")))
    rows = [(r.id, r.created, r.kind, r.kernel, r.device, r.mode, r.execution, r.engine, r.dtype, r.size, r.run_s,
             r.verdict, ",".join(r.tags)) for r in records]  # fmt: skip
    headers = ["id", "created (UTC)", "kind", "kernel", "device", "mode", "execution", "engine", "dtype", "size"]
    headers += ["run s", "verdict", "tags"]
    note = host_time_note({"execution": "emulated"} for r in records if "emulated" in (r.execution or ""))
    parts.append(section("Results", table(headers, rows) + note))
    return page("hwbench history", f"{len(records)} stored result(s); filters: {filters or 'none'}", parts)


def write_page(text: str, path: str | Path) -> Path:
    """Atomically: a crash leaves no half page that looks complete."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
