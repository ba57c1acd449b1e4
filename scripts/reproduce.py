"""Regenerate docs/reproduction.md: every device and mode audited in emulation, side by side with
the founding study's published figures.

    python scripts/reproduce.py                # full protocols (several minutes on 2 cores)
    python scripts/reproduce.py --quick        # smaller protocols, for a first look
    python scripts/reproduce.py --render-only  # the page again from docs/reproduction/report.json

All candidates run in one audit so that the reference, gold and ensemble runs are shared. The
audit's report is written first (``report.json``, with the plots); the page is then rendered from
that file alone, tables and prose alike: ``docs/reproduction-commentary.md`` is a template whose
figures are placeholders filled from the same report (see :func:`fill`), so the prose cannot quote
a figure the tables do not show. ``tests/docs/test_reproduction_page.py`` renders the page from
the saved report and compares it with the committed one.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "reproduction" / "report.json"
PAGE = ROOT / "docs" / "reproduction.md"
COMMENTARY = ROOT / "docs" / "reproduction-commentary.md"
# The study's published figures (Landsmeer et al. 2024; docs/io-ehh.md, "What the study found").
PUBLISHED_STRESS_MV = {"ipu": "0.087", "a100": "0.135", "tpu-v3": "0.672", "groq": "unstable (8.51e36)"}
PUBLISHED_VALIDATION = {"a100/tensorrt": "mV-order", "groq": "mV-order"}
# {{protocol|runs|path}}: a figure of the report. ``runs`` is a run's label ("groq [default]"),
# several joined by ";", or "role=ensemble"; ``path`` is a dotted path into each run's summary
# ("deviation.max", "violation.cell_grid_index") or into its verdict ("verdict.score"); with
# ``runs`` "-", a path into the protocol's own report ("floor.max_outside_spikes", "regime").
# Several values give "lo–hi" (numbers) or must agree (words).
# An optional fourth field is a format spec for the number ("{{stress|groq [default]|violation.t_ms|.7g}}").
PLACEHOLDER = re.compile(r"\{\{(\w+)\|([^|}]+)\|([\w.]+)(?:\|([^|}]+))?\}\}")
WIDTH = 100  # the page's prose is wrapped to this width once the figures are in


def fmt(x: Any, spec: str = ".3g") -> str:
    """A figure as the tables print it: three significant digits (or ``spec``); inf / NaN said so."""
    if x is None:
        return "-"
    if x in ("Infinity", "-Infinity", "NaN"):  # how the report's JSON writes non-finite numbers
        x = float(x)
    if isinstance(x, str):
        return x
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"not a figure: {x!r}")
    if isinstance(x, int):
        return str(x)
    return "inf / NaN" if not math.isfinite(x) else format(x, spec)


def _protocol(report: dict[str, Any], name: str) -> dict[str, Any]:
    for p in report["protocols"]:
        if p["name"] == name:
            return p
    raise KeyError(f"the report has no protocol {name!r}")


def _dig(data: Any, path: list[str]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            raise KeyError(f"no {'.'.join(path)!r} here")
        data = data[key]
    return data


def _values(report: dict[str, Any], protocol: str, runs: str, path: str) -> list[Any]:
    p = _protocol(report, protocol)
    head, *rest = path.split(".")
    if runs == "-":  # a figure of the protocol itself: its floor, its regime
        return [_dig(p, path.split("."))]
    if runs.startswith("role="):
        chosen = [r for r in p["runs"] if r["role"] == runs.removeprefix("role=")]
    else:
        labels = [label.strip() for label in runs.split(";")]
        chosen = [r for label in labels for r in p["runs"] if r["label"] == label]
        if len(chosen) != len(labels):
            raise KeyError(f"{protocol} has no run named {runs!r}")
    if not chosen:
        raise KeyError(f"{protocol} has no runs {runs!r}")
    if head == "verdict":
        verdicts = {(v["device"], v["mode"]): v for v in p["verdicts"]}
        return [_dig(verdicts[(r["device"], r["mode"])], rest) for r in chosen]
    return [_dig(r, path.split(".")) for r in chosen]


def fill(template: str, report: dict[str, Any]) -> str:
    """``template`` with every ``{{protocol|runs|path}}`` replaced by that figure of ``report``."""

    def one(match: re.Match[str]) -> str:
        protocol, runs, path, spec = match.groups()
        values = _values(report, protocol, runs, path)
        spec = spec or ".3g"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values) and len(set(values)) > 1:
            return f"{fmt(min(values), spec)}–{fmt(max(values), spec)}"
        texts = sorted({fmt(v, spec) for v in values})
        if len(texts) > 1:
            raise ValueError(f"{match.group(0)} names runs whose values differ: {texts}")
        return texts[0]

    return reflow(PLACEHOLDER.sub(one, template))


def reflow(text: str) -> str:
    """Prose paragraphs and list items wrapped to :data:`WIDTH` (figures change the lines' lengths);
    headings, tables and code are left as they are."""
    out = []
    for block in text.split("\n\n"):
        first = block.lstrip("\n")
        if not first or first.startswith(("#", "|", "```", "    ")):
            out.append(block)
            continue
        items = re.split(r"\n(?=- )", block)  # one list item (or the paragraph) at a time
        wrapped = []
        for item in items:
            bullet = item.startswith("- ")
            words = " ".join(line.strip() for line in item.splitlines())
            indent = "  " if bullet else ""
            wrapped.append(
                textwrap.fill(words, WIDTH, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)
            )
        out.append("\n".join(wrapped))
    return "\n\n".join(out)


def _result_rows(report: dict[str, Any]) -> list[str]:
    rows = []
    for cand in report["settings"]["candidates"]:
        label = f"{cand['device']} [{cand['mode']}]"
        cells = []
        for name in ("validation", "stress"):
            p = next((p for p in report["protocols"] if p["name"] == name), None)
            run = next((r for r in p["runs"] if r["label"] == label), None) if p else None
            if p is None or run is None:
                cells += ["-", "-", "-"]
                continue
            verdict = next(
                (v for v in p["verdicts"] if (v["device"], v["mode"]) == (cand["device"], cand["mode"])), None
            )
            dev = run["deviation"] or {}
            verdict_text = (verdict["verdict"] if verdict else "-") + (" (hard check)" if run["violation"] else "")
            cells += [fmt(dev.get("max")), fmt(dev.get("max_outside_spikes")), verdict_text]
        key = f"{cand['device']}/{cand['mode']}"
        published_stress = PUBLISHED_STRESS_MV.get(cand["device"], "-")
        published_validation = PUBLISHED_VALIDATION.get(key, PUBLISHED_VALIDATION.get(cand["device"], "-"))
        rows.append(
            f"| {label} | {cells[0]} | {cells[2]} | {published_validation} "
            f"| {cells[3]} | {cells[4]} | {cells[5]} | {published_stress} |"
        )
    return rows


def _floor_rows(report: dict[str, Any]) -> list[str]:
    rows = []
    for p in report["protocols"]:
        for r in p["runs"]:
            if r["role"] in ("gold", "ensemble"):
                dev, spikes = r["deviation"] or {}, r["spikes"] or {}
                rows.append(
                    f"| {p['name']} | {r['label']} | {fmt(dev.get('max'))} | {fmt(dev.get('max_outside_spikes'))} | "
                    f"{spikes.get('matched_fraction', 1):.3f} |"
                )
    return rows


def refused_devices(kernel_name: str) -> list[tuple[str, str]]:
    """The registered devices (the CPU reference aside) that refuse the kernel, with the reason."""
    from hwbench.core.plugins import load_registry

    registry = load_registry(env={"HWBENCH_LOAD_PLUGINS": ""})
    kernel = registry.kernel(kernel_name)
    supports = {name: device.supports(kernel, None) for name, device in registry.devices.items() if name != "cpu"}
    return [(name, s.reason) for name, s in supports.items() if not s.ok]


def render(report: dict[str, Any], commentary: str, refused: list[tuple[str, str]]) -> str:
    """The whole page, from the audit report alone (and the devices that refused the kernel)."""
    from hwbench.core.bench import STUDY_SEED

    settings = report["settings"]
    violations = [
        f"- **{p['name']}, {r['label']}**: {r['violation'].get('explanation') or r['violation']}"
        for p in report["protocols"]
        for r in p["runs"]
        if r["violation"]
    ]
    return TEMPLATE.format(
        mode="quick (reduced) protocols" if settings["quick"] else "full protocols",
        reduced="; ".join(f"{p['name']}: {p['reduced']}" for p in report["protocols"] if p["reduced"]) or "none",
        elapsed=f"{report['elapsed_s']:.0f}",
        rows="\n".join(_result_rows(report)),
        floor_rows="\n".join(_floor_rows(report)),
        regimes=", ".join(f"{p['name']}: {p['regime']}" for p in report["protocols"]),
        refused="\n".join(f"- `{n}`: {why}" for n, why in refused) or "- none",
        violations="\n".join(violations) or "- none",
        commentary=fill(commentary, report),
        command="python scripts/reproduce.py" + (" --quick" if settings["quick"] else ""),
        seed=settings["seed"],
        network="the study's own network (ioperf `sample_connections_3d` after `np.random.seed(42)`)"
        if settings["seed"] == STUDY_SEED
        else "not the study's seed: the network differs from the study's",
    )


def run_audit(quick: bool, out: Path) -> Path:
    """Audit every device mode that can run io-ehh; write ``report.json`` and the plots to ``out``."""
    from hwbench.accuracy.audit import AuditSettings, Candidate
    from hwbench.core.plugins import load_registry
    from hwbench.core.results import write_json
    from hwbench.library.plots import audit_plots
    from hwbench.stress.protocols import standard_auditor

    registry = load_registry(env={"HWBENCH_LOAD_PLUGINS": ""})  # hwbench's own devices, as refused_devices
    kernel = registry.kernel("io-ehh")
    candidates = [
        Candidate(name, mode)
        for name, device in registry.devices.items()
        if name != "cpu" and device.supports(kernel, None).ok
        for mode in device.modes
    ]
    auditor = standard_auditor(registry, AuditSettings(kernel=kernel.name, quick=quick), lambda *_: None)
    report = auditor.run(candidates)
    write_json(report, out / "report.json")
    audit_plots(auditor.data, out)
    return out / "report.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--render-only", action="store_true", help="render the page from the saved report")
    parser.add_argument("--out", default=str(REPORT.parent))
    parser.add_argument("--doc", default=str(PAGE))
    args = parser.parse_args()
    report_path = Path(args.out) / "report.json"
    if not args.render_only:
        run_audit(args.quick, Path(args.out))
    report = json.loads(report_path.read_text())
    commentary = COMMENTARY.read_text() if COMMENTARY.exists() else ""
    Path(args.doc).write_text(render(report, commentary, refused_devices(report["settings"]["kernel"])))
    print(f"wrote {args.doc} from {report_path}", file=sys.stderr)
    return 0


TEMPLATE = """# Reproducing the founding study in emulation

Generated by `{command}` ({mode}; reductions: {reduced}); the audit took {elapsed} s on this machine.
Seed {seed}: {network}.
Do not edit by hand: edit `scripts/reproduce.py` or `docs/reproduction-commentary.md` and rerun
(`--render-only` renders the page again from the saved report, `docs/reproduction/report.json`).
Every candidate below is **emulated** (no accelerator present): its numbers come from its numerics
profile (`hwbench devices --json` lists every assumption with its source and confidence).

## Results beside the study's

Maximum absolute deviation of the somatic voltage from the CPU fp32 reference (mV).

| device [mode] | validation max | validation verdict | study (validation) | stress max | stress max \
outside spikes | stress verdict | study (stress max) |
|---|---|---|---|---|---|---|---|
{rows}

Noise floor (legitimate IEEE variants vs the CPU fp32 reference; regimes: {regimes}):

| protocol | run | max (mV) | max outside spikes (mV) | spikes matched |
|---|---|---|---|---|
{floor_rows}

Hard-check violations, located step by step:

{violations}

Devices that refuse io-ehh:

{refused}

{commentary}
"""

if __name__ == "__main__":
    sys.exit(main())
