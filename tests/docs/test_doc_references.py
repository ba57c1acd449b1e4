"""Everything a user is pointed to is in the project: doc links, file names in the docs, the
sources hwbench prints, and the paths its code and scripts name.

A user has the project and nothing else: no notes of the people who built it, no folder of theirs.
So every place that sends a reader to a file must send them to one the project holds:

* relative markdown links in ``README.md``, ``docs/**/*.md`` and the notebook's markdown cells
  resolve to an existing file (an anchor after ``#`` is not checked; web links are not checked);
* a project path written out in prose or code (``docs/io-ehh.md``, ``hwbench/api.py``,
  ``tests/...``, ``benchmarks/...``, ``scripts/...``, or ``specs/...``, a folder the project does
  not have) exists, relative to the repository root;
* no absolute path to a file (``/home/.../devices.md``): it names someone's machine;
* every string hwbench prints about its registered things — device specs and their sources, each
  mode's numerics profile (op sources, notes, knobs), kernel records and their audit facts,
  metric and protocol records, the matrix units — passes the same two checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TOP = ("docs", "specs", "hwbench", "tests", "benchmarks", "scripts")
# a project path: one of the top folders, not inside a longer path or a URL
PROJECT_PATH = re.compile(rf"(?<![\w/.:@-])(?:\.\./)*(?:{'|'.join(TOP)})/[\w./*-]*[\w*]")
# an absolute path to a file (a document, source or data file): someone's machine
ABSOLUTE_FILE = re.compile(r"(?<![\w/.:~-])/(?:[\w.-]+/)+[\w.-]+\.(?:md|py|ipynb|toml|json|npz|txt|csv)\b")
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


# a path that climbs out of the folder it is written in
PARENT_PATH = re.compile(r"(?<![\w/.:@-])(?:\.\./)+[\w./-]*\w")
# the plugin guide's `# file: PATH` lines name files of the plugin the reader writes, not the project's
PLUGIN_FILE = re.compile(r"^# file: \S+$", flags=re.MULTILINE)


def missing_paths(text: str, folder: Path = REPO, *, outside: bool = True, tops: tuple[str, ...] = TOP) -> list[str]:
    """The project paths ``text`` names (under the folders ``tops``) that do not exist; with
    ``outside``, also any absolute file path and any ``../`` path (taken from ``folder``) that
    leaves the project or does not exist."""
    text = PLUGIN_FILE.sub("", text)
    bad = []
    for match in PROJECT_PATH.finditer(text):
        path = match.group(0).split("::")[0].rstrip(".")
        if path.split("/")[0] not in tops and not path.startswith("../"):
            continue
        if Path(path).stem.isupper():
            continue  # a placeholder: benchmarks/NAME.py
        if not path.startswith("../") and not any(REPO.glob(path)):
            bad.append(path)
    if not outside:
        return bad
    bad += [f"absolute path {m.group(0)}" for m in ABSOLUTE_FILE.finditer(text)]
    for match in PARENT_PATH.finditer(text):
        target = (folder / match.group(0).rstrip(".")).resolve()
        if not target.is_relative_to(REPO) or not target.exists():
            bad.append(match.group(0))
    return bad


def anchors(page: Path) -> set[str]:
    """The anchors a markdown viewer gives a page's headings (GitHub's rule: lower case, punctuation
    dropped, spaces to hyphens, repeats numbered)."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def broken_links(text: str, folder: Path) -> list[str]:
    """Relative links of ``text`` (a page in ``folder``) to a file that is missing or outside the
    project, or to a heading its markdown page does not have."""
    bad = []
    for match in MD_LINK.finditer(text):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a web link, a mail address, an anchor on the same page
        path, _, anchor = target.partition("#")
        if path.startswith("/") or not (folder / path).resolve().is_relative_to(REPO):
            bad.append(f"{target} (outside the project)")
        elif not (folder / path).exists():
            bad.append(target)
        elif anchor and path.endswith(".md") and anchor not in anchors(folder / path):
            bad.append(f"{target} (no such heading)")
    return bad


def doc_pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def notebook_markdown() -> str:
    cells = json.loads((REPO / "docs" / "library.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def code_files() -> list[Path]:
    return [p for top in ("hwbench", "benchmarks", "scripts", "tests") for p in sorted((REPO / top).rglob("*.py"))]


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_doc_links_and_paths_exist(page: Path) -> None:
    text = page.read_text()
    bad = broken_links(text, page.parent) + missing_paths(text, page.parent)
    assert not bad, f"{page.relative_to(REPO)} points at files a user does not have: {bad}"


def test_notebook_links_and_paths_exist() -> None:
    text = notebook_markdown()
    bad = broken_links(text, REPO / "docs") + missing_paths(text, REPO / "docs")
    assert not bad, f"docs/library.ipynb points at files a user does not have: {bad}"


def test_paths_named_in_code_exist() -> None:
    """Project paths in the package, benchmarks, scripts and examples exist, and the docs and specs
    the tests cite. Absolute and ``../`` paths are data outside the package (the bad-input corpus is
    made of them, a script's usage shows ``--out /tmp/new.npz``); the package's docstrings are read
    as documentation. A test's other paths may be a plugin's own files (``tests/test_acme.py``)."""
    here = Path(__file__).resolve()  # its examples of bad paths are the point
    files = [f for f in [*code_files(), *sorted((REPO / "docs" / "examples").glob("*.py"))] if f != here]
    bad = {}
    for f in files:
        package = f.is_relative_to(REPO / "hwbench")
        tops = ("docs", "specs") if f.is_relative_to(REPO / "tests") else TOP
        if missing := missing_paths(f.read_text(), f.parent, outside=package, tops=tops):
            bad[str(f.relative_to(REPO))] = missing
    assert not bad, f"code names files the project does not have: {bad}"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _strings(v)


def printed_records() -> Iterator[tuple[str, Any]]:
    """(what, record as JSON data) for everything the registry can print about itself."""
    from hwbench.accuracy.numerics.matrix_unit_catalog import named_models
    from hwbench.api import load_registry

    registry = load_registry(env={"HWBENCH_LOAD_PLUGINS": ""})  # the project's own plugins only
    for name, device in registry.devices.items():
        yield f"device {name}", device.spec.model_dump(mode="json")
        for mode in device.modes:
            profile = device.numerics(mode)
            if profile is not None:
                yield f"device {name} [{mode}] profile", profile.model_dump(mode="json")
    for name, kernel in registry.kernels.items():
        yield f"kernel {name}", kernel.info.model_dump(mode="json")
    for name, metric in registry.metrics.items():
        yield f"metric {name}", metric.info.model_dump(mode="json")
    for name, protocol in registry.protocols.items():
        yield f"protocol {name}", protocol.info.model_dump(mode="json")
    for name, models in named_models().items():
        for (fmt_in, fmt_out), model in models.items():
            yield f"matrix unit {name} {fmt_in}->{fmt_out}", model.model_dump(mode="json")


def test_printed_sources_name_only_project_files() -> None:
    records = list(printed_records())
    kinds = {what.split()[0] for what, _ in records}
    assert {"device", "kernel", "metric", "protocol", "matrix"} <= kinds
    sources = [s for _, data in records for s in _strings(data) if "source" in json.dumps(data)]
    assert len(sources) > 100  # the walk reached the records' sources
    bad = {what: m for what, data in records if (m := [x for s in _strings(data) for x in missing_paths(s)])}
    assert not bad, f"hwbench prints sources naming files a user does not have: {bad}"


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("see specs/io-ehh.md", ["specs/io-ehh.md"]),
        ("(`docs/devices/ipu.md`, `/work/shared/specs/devices.md`)", ["absolute path /work/shared/specs/devices.md"]),
        ("as ../shared/specs/io-ehh.md describes", ["../shared/specs/io-ehh.md"]),
        ("# file: tests/test_acme.py\nrun python benchmarks/NAME.py", []),
        ("docs/audit.md and tests/accuracy/test_rounding_*.py and tests/test_layout.py::test_small_example", []),
        ("https://github.com/x/y/blob/main/docs/none.md, /proc/cpuinfo, /usr/bin/time", []),
    ],
)
def test_the_path_check_finds_what_it_should(text: str, bad: list[str]) -> None:
    assert missing_paths(text) == bad


def test_the_link_check_finds_what_it_should() -> None:
    docs = REPO / "docs"
    text = "[a](audit.md#baseline-cache) [b](../README.md) [c](https://x.org/a.md) [d](#x) [e](gone.md) [f](/etc/x.md)"
    assert broken_links(text, docs) == ["gone.md", "/etc/x.md (outside the project)"]
    stale = "[g](audit.md#program-cache-a-warm-audit-traces-nothing-issue-31-third-round)"
    assert broken_links(stale, docs) == [stale[4:-1] + " (no such heading)"]
