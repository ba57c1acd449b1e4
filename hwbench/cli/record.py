"""Recording a command's result in the results store: the options and the ONE call each command makes.

``@store_options`` adds ``--store URL``, ``--no-store`` and ``--tag`` to a command without touching
its signature, and starts opening the store in a background thread while the command works (the
SQLAlchemy import, schema check and environment capture overlap the run), so that
:func:`record_result` at the end only inserts one row: the 10 ms budget of docs/results.md.
A store that cannot be written never fails the command: its result file is already written; the
failure is one warning line on stderr.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click
from pydantic import BaseModel

from hwbench.cli.output import stderr, warn
from hwbench.cli.validate import Tag
from hwbench.library.recording import _document, environment_for
from hwbench.store.location import StoreLocation, resolve_location

_META_KEY = "hwbench.store"


@dataclass
class _Pending:
    """The store being opened in the background for this command invocation."""

    location: StoreLocation
    tags: tuple[str, ...]
    thread: threading.Thread | None = None
    store: Any = None
    environment: Any = None
    error: BaseException | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def start(self) -> None:
        # Not a daemon: a command interrupted while this thread is still importing SQLAlchemy's C
        # extensions would otherwise finalise the interpreter under it (seen as a SIGSEGV on Ctrl-C);
        # the exit waits the fraction of a second the opening takes instead.
        self.thread = threading.Thread(target=self._open, name="hwbench-store-open", daemon=False)
        self.thread.start()

    def _open(self) -> None:
        try:
            from hwbench.store.db import Store
            from hwbench.store.environment import capture

            self.environment = capture()
            self.store = Store(self.location)
            self.store.warm_up(self.environment)
        except BaseException as exc:  # reported by record_result, never raised in the thread
            self.error = exc


def store_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a click command: ``--store``, ``--no-store``, ``--tag``; recording starts opening."""

    @functools.wraps(command)
    def wrapper(*args: Any, store: str | None, no_store: bool, tags: tuple[str, ...], **kwargs: Any) -> Any:
        location = resolve_location(store, disabled=no_store)
        if location is not None:
            pending = _Pending(location, tags)
            pending.start()
            click.get_current_context().meta[_META_KEY] = pending
        return command(*args, **kwargs)

    wrapper = click.option("--tag", "tags", type=Tag(), multiple=True, help="Tag the stored result (repeatable).")(
        wrapper
    )
    wrapper = click.option(
        "--no-store", is_flag=True, help="Do not record the result in the results store (docs/results.md)."
    )(wrapper)
    return click.option(
        "--store",
        default=None,
        metavar="URL",
        help="Results store: sqlite:///PATH, postgresql://..., a file, or 'none' to record nothing "
        "(default $HWBENCH_STORE, else the data dir).",
    )(wrapper)


def opened_store() -> _Pending | None:
    """This command's store, once opened (waits for the background open); None when recording is
    off or the store could not be opened (then one warning line says why)."""
    ctx = click.get_current_context(silent=True)
    pending: _Pending | None = None if ctx is None else ctx.meta.get(_META_KEY)
    if pending is None:
        return None
    if pending.thread is not None:
        pending.thread.join()
    if pending.error is not None:
        warn(f"results not recorded in the store {pending.location.describe()}: {pending.error}")
        return None
    return pending


def environment_of(pending: _Pending, document: dict[str, Any], profile: Any = None) -> Any:
    """The environment ``document`` is stored with (see :func:`hwbench.library.recording.environment_for`)."""
    return environment_for(pending.environment, document, profile)


def record_result(result: BaseModel) -> int | None:
    """Record ``result`` (run, bench, audit or any later kind) if this command's store is on; its id."""
    ctx = click.get_current_context(silent=True)
    pending: _Pending | None = None if ctx is None else ctx.meta.get(_META_KEY)
    if pending is None:
        return None
    if pending.thread is not None:
        pending.thread.join()
    try:
        if pending.error is not None:
            raise pending.error
        document = _document(result)
        environment = environment_of(pending, document)
        rid: int = pending.store.record(document, environment, pending.tags)  # the store is loaded lazily
    except Exception as exc:
        warn(f"result not recorded in the store {pending.location.describe()}: {exc}")
        return None
    stderr.print(f"recorded as result {rid} (hwbench results show {rid})", highlight=False)
    return rid
