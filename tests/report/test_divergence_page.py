"""A GroqChip audit's page (issue 33): the failing candidate is in the stress chart, marked as
diverged at its time, and the page shows the probe around the first divergence (reference, fp64 gold,
candidate, the cell the forensics name), from the stored report alone."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import hwbench
from hwbench.core.strict_json import loads_strict
from hwbench.report.html import ReportSource, deviation_bars, render_result


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
