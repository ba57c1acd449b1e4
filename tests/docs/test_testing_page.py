"""docs/testing.md's test files, run as written: the precision test fails on the GroqChip and passes
on the A100 (the Loihi skipped, saying why), and hypothesis finds the input that breaks fp8.

Each ``# file: PATH`` block of the page is written into a fresh project folder and run with pytest
in a subprocess, as a user would run it (the plugin loaded through its ``pytest11`` entry point);
the output lines the page quotes are checked against the real ones.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")

PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCK = re.compile(r"^```python\n(# file: (\S+)\n.*?)^```", re.DOTALL | re.MULTILINE)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user-project")
    for code, path in BLOCK.findall(PAGE.read_text()):
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(code)
    return folder


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HWBENCH_STORE": "none", "HOME": str(project)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=900, env=env)


def test_the_page_has_its_two_files(project: Path) -> None:
    assert sorted(p.name for p in project.glob("*.py")) == ["test_fp8.py", "test_precision.py"]


def test_precision_file_fails_on_groq_and_passes_on_a100(project: Path) -> None:
    out = _pytest(project, "test_precision.py", "--hwbench-devices", "a100,groq", "-ra")
    text = out.stdout
    assert out.returncode == 1, text[-3000:]
    assert "2 failed, 2 passed, 1 skipped" in text
    assert "FAILED test_precision.py::test_attention_is_close[groq]" in text
    assert "FAILED test_precision.py::test_attention_is_close_for_other_inputs[groq]" in text
    page = PAGE.read_text()
    quoted = page[page.index("AssertionError: attention on groq") : page.index("SKIPPED [1]")].splitlines()[:4]
    for line in quoted:  # the failure the page quotes, line by line
        assert line.strip() in text, line
    assert "device 'loihi' (neuromorphic) has no floating-point arithmetic to run a function on" in text


def test_hypothesis_finds_the_input_that_breaks_fp8(project: Path) -> None:
    out = _pytest(project, "test_fp8.py")
    text = out.stdout
    assert out.returncode == 1, text[-3000:]
    assert re.search("Falsifying example|Failing test case", text)  # hypothesis's words, by version
    assert "the error first grows at test_fp8.py:14 (layer) dot_general" in text
    assert re.search(
        r"mechanism: (fp8 range: \d+ operand values more than 229376x below their tensor's|matrix-unit inputs rounded "
        r"to fp8-e4m3fn \(3 fraction bits\)|non-finite: \d+ values became inf or NaN where the float64 reference)",
        text,
    )  # the three outcomes the page names; which one the shrinker lands on varies
