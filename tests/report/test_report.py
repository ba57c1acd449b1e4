"""``hwbench report``: self-contained HTML, checked in a real headless Chromium (Debian's package).

The audit page is made from a real audit report (tests/data/audit_report_tpu_v3_quick.json, written
by ``hwbench audit -d tpu-v3 --quick --protocol validation --out DIR``), recorded in a store first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hwbench.cli.main import main
from hwbench.store.db import Store
from hwbench.store.environment import capture
from hwbench.store.location import resolve_location
from tests.store.conftest import bench_doc

DATA = Path(__file__).parent.parent / "data"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def pages(tmp_path, monkeypatch) -> dict[str, Path]:
    """An audit page (stored result), a bench page and a run page (result files), and a history page."""
    from hwbench.library.recording import _devices

    monkeypatch.setenv("HWBENCH_STORE", str(tmp_path / "store.sqlite"))
    store = Store(resolve_location())
    audit = json.loads((DATA / "audit_report_tpu_v3_quick.json").read_text())
    env = capture()
    used = _devices(audit)
    env.devices, env.profiles = used.devices, used.profiles
    audit_id = store.record(audit, env, ("nightly",))
    for i, t in enumerate((1.0, 1.1, 0.9)):
        store.record(bench_doc([t, t * 1.01, t * 0.99], created=f"2026-01-0{i + 1}T00:00:00+00:00"), env, ())
    bench_file = tmp_path / "bench" / "bench.json"
    bench_file.parent.mkdir()
    bench_file.write_text(json.dumps(bench_doc([0.5, 0.51])))
    run_file = tmp_path / "run" / "run.json"  # a real run, traces included
    assert main(["run", "--cells", "64", "--ms", "20", "--no-store", "--out", str(run_file)]) == 0
    out = {name: tmp_path / f"{name}.html" for name in ("audit", "bench", "history", "run")}
    assert main(["report", str(audit_id), "--out", str(out["audit"])]) == 0
    assert main(["report", str(bench_file), "--out", str(out["bench"])]) == 0
    assert main(["report", "history", "--kind", "bench", "--out", str(out["history"])]) == 0
    assert main(["report", str(run_file), "--out", str(out["run"])]) == 0
    return out


def test_pages_are_self_contained_and_complete(pages) -> None:
    text = pages["audit"].read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)  # nothing loaded from outside
    assert "Overall verdict: PASS" in text and "trajectory-stable regime" in text  # verdict and its reasons
    assert "Profile assumptions: tpu-v3-default" in text and "Google Cloud TPU documentation" in text  # sources
    assert text.count("data:image/png;base64,") >= 1
    assert not list(pages["audit"].parent.glob("*.partial"))
    assert "Measurement: no verdict" in pages["bench"].read_text()
    assert "Probed traces" in pages["run"].read_text()
    history = pages["history"].read_text()
    assert "3 stored result(s)" in history and '<h2>History</h2><img src="data:image/png;base64,' in history


def test_bad_targets_exit_2(tmp_path, capsys) -> None:
    assert main(["report", "not-a-thing"]) == 2
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    assert main(["report", str(bad), "--out", str(tmp_path / "x.html")]) == 2
    assert "not a hwbench result file" in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_pages_render_in_headless_chromium(pages) -> None:
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: install Debian's chromium package (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (test extra) is missing")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for name, path in pages.items():
                page = browser.new_page()
                errors: list[str] = []
                requests: list[str] = []
                page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.on("request", lambda r, requests=requests: requests.append(r.url))
                page.goto(path.as_uri(), wait_until="load")
                assert errors == [], f"{name}: {errors}"
                assert all(u.startswith(("file:", "data:")) for u in requests), f"{name}: {requests}"
                verdict = page.locator("#verdict")
                assert verdict.is_visible()
                expected = "Overall verdict: PASS" if name == "audit" else "Measurement: no verdict"
                assert expected in verdict.inner_text()
                images = page.locator("img")
                assert images.count() >= 1
                widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
                assert all(w > 0 for w in widths), f"{name}: an embedded plot did not decode"
                page.close()
        finally:
            browser.close()


def test_bench_page_says_whose_times_and_quotes_the_chip() -> None:
    """An emulated bench's page: the execution column, the sentence saying the times are this host's,
    and the real chip's published figure for the same configuration, with its source."""
    from hwbench.core.published import PublishedTiming
    from hwbench.report.html import ReportSource, render_result

    doc = bench_doc([0.5, 0.51], device="groq", mode="default", execution="emulated", ncells=64)
    figure = PublishedTiming(kernel="io-ehh", connected=True, ncells=64, workload="'3.7x speedup'", figure=3.7,
                             unit="times the A100's speed", source="Landsmeer et al. 2024, Sec. VI-B2")  # fmt: skip
    doc["timings"][0]["published"] = [figure.model_dump(mode="json")]
    page = render_result(ReportSource(doc, "bench", "file bench.json"))
    assert "<th>execution</th>" in page and "<td>emulated</td>" in page
    assert "the times are this host&#x27;s time to emulate the chip, not the chip&#x27;s own time" in page
    assert "<h3>Published for the real chip</h3>" in page and "3.7 times the A100&#x27;s speed" in page
    assert "Landsmeer et al. 2024, Sec. VI-B2" in page
