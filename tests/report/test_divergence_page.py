"""A GroqChip audit's page (issue 33): the failing candidate is in the stress chart, marked as
diverged at its time, and the page shows the probe around the first divergence (reference, fp64 gold,
candidate, the cell the forensics name), from the stored report alone: the blow-up to ~1e36 on a
symlog axis, and the window before it on the probe's own scale, where the onset shows. The page also
says what the emulated run computed natively, and tabulates the kernel metrics with their units."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import hwbench
from hwbench.core.strict_json import loads_strict
from hwbench.report.charts import divergence_figure
from hwbench.report.html import ReportSource, deviation_bars, excerpt_series, render_result


@pytest.fixture(scope="module")
def groq_stress(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("groq") / "out"
    result = hwbench.audit("groq", quick=True, protocols=["stress"], out=out, progress="none")
    assert str(result.verdict) == "FAIL"
    return loads_strict((out / "report.json").read_text())  # what a file or the store hands the page


def test_failing_candidate_is_marked_diverged_at_its_time(groq_stress: dict[str, Any]) -> None:
    runs = groq_stress["protocols"][0]["runs"]
    candidate = next(r for r in runs if r["role"] == "candidate")
    devs, diverged = deviation_bars(runs)
    assert candidate["label"] not in dict(devs)
    t_s = candidate["violation"]["t_ms"] / 1000
    assert diverged == {candidate["label"]: f"diverged at t = {t_s:.5g} s"}
    assert {label for label, _ in devs} == {r["label"] for r in runs if r["role"] not in ("reference", "candidate")}


def test_report_keeps_the_traces_around_the_first_divergence(groq_stress: dict[str, Any]) -> None:
    candidate = next(r for r in groq_stress["protocols"][0]["runs"] if r["role"] == "candidate")
    violation = candidate["violation"]
    excerpt = violation["traces"]
    assert excerpt["cell"] == violation["cell"] and excerpt["probe"] == "V_soma"
    assert set(excerpt["series"]) == {"reference", "gold (CPU fp64)", candidate["label"]}
    times = excerpt["t_ms"]
    assert times[0] <= violation["t_ms"] - 50 and times[-1] >= violation["t_ms"] + 10
    cand = [float(v) for v in excerpt["series"][candidate["label"]]]
    assert all(math.isfinite(v) for v, t in zip(cand, times, strict=True) if t < violation["t_ms"] - 1)
    # it diverged inside the window: NaN (written "NaN"), or, where the chip saturates (the GroqChip's
    # default special-value policy), a voltage no membrane reaches
    assert any(not math.isfinite(v) or abs(v) > 1e6 for v in cand)


def test_page_from_the_report_alone_draws_both(groq_stress: dict[str, Any], tmp_path: Path) -> None:
    page = render_result(ReportSource(groq_stress, "audit", "stored result 1"))
    assert "First divergence: groq [default]" in page and "removable singularity" in page
    assert page.count("data:image/png;base64,") == 2  # the deviation bars and the divergence traces


def test_notebook_fragment_is_scoped_to_itself(groq_stress: dict[str, Any]) -> None:
    """In Jupyter the report is a fragment: no page around it, and its styles touch only itself."""
    import re

    from hwbench.report.html import render_fragment

    fragment = render_fragment(ReportSource(groq_stress, "audit", "this session"))
    assert "<html" not in fragment and 'class="verdict FAIL"' in fragment
    css = re.search(r"<style>(.*?)</style>", fragment, re.S)
    assert css is not None
    selectors = [sel.strip() for rule in css.group(1).split("}") for sel in rule.partition("{")[0].split(",") if sel]
    assert selectors and all(sel.startswith(".hwbench-report") for sel in selectors)


def test_divergence_shows_the_onset_on_the_probe_scale(groq_stress: dict[str, Any]) -> None:
    import matplotlib.pyplot as plt
    import numpy as np

    candidate = next(r for r in groq_stress["protocols"][0]["runs"] if r["role"] == "candidate")
    violation = candidate["violation"]
    series = excerpt_series(violation["traces"])
    assert series[0].label == "reference"
    fig = divergence_figure(series, t_violation=violation["t_ms"], title="t", ylabel="V_soma mV")
    whole, before, diff = fig.axes
    assert whole.get_yscale() == "symlog"  # the blow-up (a voltage no membrane reaches) fits beside the rest
    assert max(abs(v) for v in whole.get_ylim()) > 1e6
    low, high = before.get_ylim()  # before the violation: the probe's own linear scale, in mV
    assert before.get_yscale() == "linear" and -200 < low < high < 100
    assert all(max(line.get_xdata()) <= violation["t_ms"] for line in before.get_lines()[:-1])
    onset = next(line for line in diff.get_lines() if line.get_label() == f"{candidate['label']} - reference")
    gap = np.abs(np.asarray(onset.get_ydata(), dtype=float))
    assert np.all(np.isfinite(gap)) and 0 < gap.max() < 100  # the candidate parts from the reference, in mV
    plt.close(fig)


def test_emulated_runs_list_what_ran_natively(groq_stress: dict[str, Any]) -> None:
    runs = groq_stress["protocols"][0]["runs"]
    candidate = next(r for r in runs if r["role"] == "candidate")
    assert candidate["native"][0].startswith("arithmetic among compile-time constants alone")
    assert all(r["native"] == [] for r in runs if r["execution"] == "real")
    page = render_result(ReportSource(groq_stress, "audit", "stored result 1"))
    assert "Not emulated in groq [default], by design:" in page and "folded by the device&#x27;s compiler" in page
    assert "the run times (s) are this host&#x27;s time to emulate the chip" in page


def test_kernel_metrics_are_a_table_with_units(groq_stress: dict[str, Any]) -> None:
    import re

    page = render_result(ReportSource(groq_stress, "audit", "stored result 1"))
    table = page[page.index("<h3>Kernel metrics per run</h3>") :]
    table = table[: table.index("</table>")]
    assert "<th colspan='4'>throughput</th>" in table
    assert "<th>us_per_step (us)</th>" in table and "<th>events_per_s (events / s)</th>" in table
    assert " = " not in table  # no 'key = value' strings
    rows = re.findall(r"<tr><td>(.*?)</td><td>(real|emulated)</td>((?:<td class='num'>[^<]*</td>)+)</tr>", table)
    assert len(rows) == len(groq_stress["protocols"][0]["runs"])
