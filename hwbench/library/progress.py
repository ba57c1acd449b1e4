"""Progress of long library calls: rich bars in a terminal, an updating line in Jupyter, or nothing.

The library's calls (:func:`hwbench.audit`, :func:`hwbench.bench`) report progress through the one
small :class:`Progress` interface below, so the CLI and a notebook see the same work advance. Rich's
own live display needs ``ipywidgets`` inside Jupyter; :class:`NotebookProgress` needs only IPython's
display handles, which every Jupyter kernel has.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Literal

ProgressChoice = Literal["auto", "rich", "notebook", "none"]


class Progress:
    """Labelled tasks, each with a total, advanced as work is done. This base class shows nothing."""

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        return None

    def add(self, label: str, total: float) -> None:
        """Announce a task (its label is its key) and how much work it is."""

    def advance(self, label: str, amount: float, description: str | None = None, total: float | None = None) -> None:
        """Record ``amount`` more work done on ``label`` (a task not announced is added, of ``total``)."""


class RichProgress(Progress):
    """Rich bars on a console (the CLI's stderr by default)."""

    def __init__(self, columns: Sequence[Any] | None = None, console: Any = None, transient: bool = False) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as _Bars

        cols = columns or (
            TextColumn("{task.description:<44}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        self._bars = _Bars(*cols, console=console or Console(stderr=True), transient=transient)
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        self._bars.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._bars.__exit__(kind, exc, tb)

    def add(self, label: str, total: float) -> None:
        self._tasks[label] = self._bars.add_task(label, total=total)

    def advance(self, label: str, amount: float, description: str | None = None, total: float | None = None) -> None:
        if label not in self._tasks:
            self.add(label, amount if total is None else total)
        task = self._tasks[label]
        if description is None:
            self._bars.advance(task, amount)
        else:
            self._bars.update(task, advance=amount, description=description)


class NotebookProgress(Progress):
    """One HTML line per task in a Jupyter output cell, updated in place at most every 0.2 s."""

    def __init__(self) -> None:
        self._done: dict[str, float] = {}
        self._total: dict[str, float] = {}
        self._handle: Any = None
        self._shown = 0.0

    def __enter__(self) -> NotebookProgress:
        shown = _ipython_display()
        self._handle = shown.display(shown.HTML(""), display_id=True)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._show(force=True)

    def add(self, label: str, total: float) -> None:
        self._total[label], self._done[label] = total, 0.0
        self._show()

    def advance(self, label: str, amount: float, description: str | None = None, total: float | None = None) -> None:
        self._total.setdefault(label, amount if total is None else total)
        self._done[label] = self._done.get(label, 0.0) + amount
        self._show()

    def _show(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._handle is None or (not force and now - self._shown < 0.2):
            return
        self._shown = now
        rows = "".join(
            f"<tr><td>{label}</td><td><progress value='{min(self._done[label], total)}' max='{total or 1}'>"
            f"</progress></td><td>{100 * min(self._done[label] / (total or 1), 1):.0f}%</td></tr>"
            for label, total in self._total.items()
        )
        self._handle.update(_ipython_display().HTML(f"<table>{rows}</table>"))


def _ipython_display() -> Any:
    """IPython's display module (untyped; present in every Jupyter kernel)."""
    import importlib

    return importlib.import_module("IPython.display")


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where rich's console reports itself as Jupyter's)."""
    from rich.console import Console

    return bool(Console().is_jupyter)


def make_progress(choice: ProgressChoice | Progress = "auto") -> Progress:
    """The progress display a library call uses: ``auto`` picks the notebook's or rich's."""
    if isinstance(choice, Progress):
        return choice
    if choice == "auto":
        choice = "notebook" if in_notebook() else "rich"
    if choice == "notebook":
        return NotebookProgress()
    if choice == "rich":
        return RichProgress(transient=True)
    return Progress()
