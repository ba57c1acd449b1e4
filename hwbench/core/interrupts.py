"""Ctrl-C that is never lost and never lands where it cannot be handled.

Two hazards, both measured on ``hwbench run`` / ``hwbench audit`` (SIGINT at random points):

* a ``KeyboardInterrupt`` raised while JAX / XLA is being imported and initialised leaves the
  process half-initialised: SIGINT at 0.2-0.8 s into ``hwbench run --engine numpy`` (while the
  engine build imports JAX) went wrong in 4 of 7 tries (SIGSEGV twice, SIGABRT once, and once the
  interrupt was swallowed). :func:`deferred_interrupt` holds SIGINT during such a step and raises
  it when the step is over.
  The same hazard exists wherever a command imports a heavy module outside such a step (the
  audit's device probes import JAX as soon as its output folder is locked: SIGINT right after the
  lock ended in SIGSEGV 3, SIGABRT 1 and a half-imported ``jax`` 1 in 12 tries on a loaded host).
  The handler that :func:`install` sets therefore never raises inside an import: it records the
  interrupt and sends SIGINT again a moment later, until it lands outside every import;
* a ``KeyboardInterrupt`` raised inside a garbage-collector callback (JAX installs one) is
  swallowed by Python: the audit then ran to its end and published its results. The handler that
  :func:`install` sets therefore also records the interrupt, and :func:`check` (called by progress
  callbacks and before outputs are published) raises it again.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

_pending = threading.Event()


_RESEND_S = 0.05  # how soon an interrupt that arrived during an import is delivered again


def _raise(signum: int, frame: FrameType | None) -> None:
    _pending.set()
    if _importing(frame):  # a half-run import leaves the module (JAX, XLA) broken: deliver it later
        timer = threading.Timer(_RESEND_S, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt


def _importing(frame: FrameType | None) -> bool:
    """Whether the interrupted Python code runs inside an ``import`` (importlib's frames)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def install() -> None:
    """For a real ``hwbench`` process: record every SIGINT, and keep swallowed ones quiet."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return
    signal.signal(signal.SIGINT, _raise)
    default_hook = sys.unraisablehook

    def hook(unraisable: object) -> None:
        if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
            return  # recorded in _pending; check() raises it where it can be handled
        default_hook(unraisable)  # type: ignore[arg-type]  # typeshed's UnraisableHookArgs is not constructible

    sys.unraisablehook = hook


def check() -> None:
    """Raise KeyboardInterrupt if a SIGINT arrived (even one something swallowed)."""
    if _pending.is_set():
        raise KeyboardInterrupt


@contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Run the block with SIGINT held; raise KeyboardInterrupt afterwards if one arrived.

    Only the main thread can install signal handlers; elsewhere (and where SIGINT is ignored)
    the block runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)
        _pending.set()

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt
