"""A model audit's HTML page: per candidate, the error growing along the graph (node index against
log10 ulps, the floor beside it) and the node table, checked in a real headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hwbench.cli.main import main
from tests.report.test_report import CHROMIUM, CHROMIUM_ARGS

pytest.importorskip("onnxruntime")
MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("model-page")
    model, inputs = MODELS / "cnn.onnx", MODELS / "cnn_inputs.npz"
    argv = ["audit", "--model", str(model), "--inputs", str(inputs), "-d", "a100:tensorrt", "-d", "h100:fp8-e4m3"]
    assert main([*argv, "--no-store", "--out", str(tmp / "audit")]) in (0, 1)
    assert main(["report", str(tmp / "audit" / "report.json"), "--out", str(tmp / "page.html")]) == 0
    return tmp / "page.html"


def test_the_page_plots_each_candidate_along_the_graph(page_file: Path) -> None:
    text = page_file.read_text()
    assert text.count('error along the graph"') == 2  # one plot per candidate (its alt text)
    assert "Node by node: a100:tensorrt" in text and "Node by node: h100:fp8-e4m3" in text
    assert "first node above its floor: #0 /features/features.0/Conv" in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)


def test_the_model_page_renders_in_headless_chromium(page_file: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: install Debian's chromium package (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package (test extra) is missing")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_file.as_uri(), wait_until="load")
            assert errors == []
            plots = page.locator("img[alt$='error along the graph']")
            assert plots.count() == 2
            widths = page.eval_on_selector_all(
                "img[alt$='error along the graph']", "els => els.map(e => e.naturalWidth)"
            )
            assert all(w > 0 for w in widths)
            assert page.locator("h3", has_text="Node by node: h100:fp8-e4m3").is_visible()
            rows = page.locator("table:below(h3:has-text('Node by node: h100')) tbody tr")
            assert rows.count() >= 8  # every node of the CNN
        finally:
            browser.close()
