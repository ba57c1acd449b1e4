"""docs/library.ipynb runs from top to bottom in a real Jupyter kernel (nbclient), as a user would run
it: audit, divergence, two devices, history. Its progress shows as a notebook display and the audit
renders as HTML, so the notebook path of the library is exercised, not only the terminal's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "library.ipynb"


def test_library_notebook_executes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HWBENCH_STORE", str(tmp_path / "store.sqlite"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": tmp_path}})
    client.execute(env={**os.environ})
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    texts = " ".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    htmls = " ".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    assert "FAIL" in texts  # the GroqChip's verdict, printed
    assert "removable singularity" in texts  # the forensics' explanation of the first divergence
    assert 'class="verdict FAIL"' in htmls  # the audit rendered as HTML (the report page's banner)
    assert "Node by node: h100:fp8-e4m3" in htmls  # a user's model audited node by node, its page rendered
    assert "<progress" in htmls  # progress shown in the notebook while it ran
    assert "image/png" in " ".join(str(o.get("data", {}).keys()) for o in outputs)  # the traces plot
