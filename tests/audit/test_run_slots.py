"""The audit's threads: its run slots (hwbench/core/run_slots.py: at most ``slots`` runs at once,
the costliest waiting run first, ties in arrival order; a closed audit starts no waiting run; an
audit's runs simulate at most one per slot), the failure an audit reports when a part of it fails
while others wait, and no module imported for the first time by two threads at once
(docs/audit.md, "Run slots")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from hwbench.accuracy import stepped
from hwbench.accuracy.audit import IMPORTED_BY_RUNS, AuditSettings, Candidate
from hwbench.core.plugins import get_registry
from hwbench.core.run_slots import RunSlots, SlotsClosed
from hwbench.stress.protocols import standard_auditor


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "threads never reached the expected state"
        time.sleep(0.001)


def _queue_behind_holder(slots: RunSlots, costs: list[float], order: list[float]) -> tuple[threading.Event, list[Any]]:
    """One run holds the only slot until the returned event is set; then ``costs`` queue up, in
    that arrival order, each appending its cost to ``order`` once it gets the slot."""
    release, holding = threading.Event(), threading.Event()

    def holder() -> None:
        with slots.hold(0):
            holding.set()
            release.wait()

    def waiter(cost: float) -> None:
        with slots.hold(cost):
            order.append(cost)

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    holding.wait()
    for n, cost in enumerate(costs, start=1):  # one at a time, so the arrival order is the list's
        threads.append(threading.Thread(target=waiter, args=(cost,)))
        threads[-1].start()
        _wait_for(lambda n=n: slots.waiting() == n)
    return release, threads


def test_the_costliest_waiting_run_goes_first_and_ties_keep_their_arrival_order() -> None:
    slots, order = RunSlots(1), []
    costs = [1.0, 3.0, 2.0, 3.0, 0.5]
    release, threads = _queue_behind_holder(slots, costs, order)
    release.set()
    for t in threads:
        t.join()
    assert order == [3.0, 3.0, 2.0, 1.0, 0.5]
    assert slots.waiting() == 0


def test_no_more_runs_at_once_than_slots() -> None:
    slots, lock = RunSlots(2), threading.Lock()
    inside, most = [0], [0]

    def run(cost: float) -> None:
        with slots.hold(cost):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.01)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=run, args=(float(i % 3),)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 2


def test_a_failed_run_gives_its_slot_back() -> None:
    slots = RunSlots(1)
    with pytest.raises(ZeroDivisionError), slots.hold(1):
        1 / 0  # noqa: B018
    with slots.hold(1):  # would wait forever if the slot had been kept
        pass


def test_closing_starts_no_waiting_run() -> None:
    slots, order, failures = RunSlots(1), [], []
    release, threads = _queue_behind_holder(slots, [], order)

    def waiter() -> None:
        try:
            with slots.hold(5):
                order.append(5)
        except SlotsClosed as exc:
            failures.append(exc)

    late = threading.Thread(target=waiter)
    late.start()
    _wait_for(lambda: slots.waiting() == 1)
    slots.close()
    late.join()
    release.set()  # the run that held the slot finishes normally
    threads[0].join()
    assert order == [] and len(failures) == 1 and slots.waiting() == 0
    with pytest.raises(SlotsClosed), slots.hold(1):
        pass


def test_slots_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RunSlots(0)


def test_an_audit_simulates_at_most_one_run_per_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two slots: two runs simulate at once, never three. Each run, once inside ``run_scenario``,
    waits (up to a second) for a third to join it: without the slots, the validation protocol's
    candidate and two baseline groups would all be inside together; with one slot, never two."""
    cond, inside, most, started = threading.Condition(), [0], [0], []
    real = stepped.run_scenario

    def counted(*args: Any, **kwargs: Any) -> Any:
        with cond:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            started.append(kwargs["label"])
            cond.notify_all()
            cond.wait_for(lambda: inside[0] >= 3, timeout=1.0)
        try:
            return real(*args, **kwargs)
        finally:
            with cond:
                inside[0] -= 1

    monkeypatch.setattr(stepped, "run_scenario", counted)
    settings = AuditSettings(kernel="leaky-ring", quick=True, cache=False, threads=2, protocols=("validation",))
    report = standard_auditor(get_registry(), settings).run([Candidate("groq")])
    assert [p.name for p in report.protocols] == ["validation"]
    assert most[0] == 2
    assert sorted(started) == sorted(r.label for r in report.protocols[0].runs)  # every run, once


def test_a_part_stopped_by_closed_slots_gives_way_to_the_failure_that_closed_them() -> None:
    """Protocol A waits for a slot while protocol B fails: the audit reports B's error (which
    closed the slots), not A's "the audit stopped before this run started"."""
    slots, holding, release = RunSlots(1), threading.Event(), threading.Event()

    def holder() -> None:  # a run of a third protocol, busy for the whole test
        with slots.hold(0):
            holding.set()
            release.wait()

    keeper = threading.Thread(target=holder)
    keeper.start()
    holding.wait()

    def wait_for_slot() -> str:
        with slots.hold(10):
            return "ran"

    def fail() -> str:
        _wait_for(lambda: slots.waiting() == 1)  # A waits first, so its failure comes first in order
        raise ValueError("the real failure")

    def protocol_a() -> list[str]:
        return stepped.concurrently(None, [wait_for_slot, lambda: "a2"], slots)

    def protocol_b() -> list[str]:
        return stepped.concurrently(None, [lambda: "b1", fail], slots)

    try:
        with pytest.raises(ValueError, match="the real failure"):
            stepped.concurrently(None, [protocol_a, protocol_b], slots)
    finally:
        release.set()
        keeper.join()


def test_an_audit_imports_no_module_for_the_first_time_in_two_threads() -> None:
    """Every hwbench module an audit's runs need is imported before its threads start (a fresh
    interpreter; the modules first imported by a worker thread are recorded)."""
    code = textwrap.dedent(
        """
        import builtins, sys, threading
        from hwbench.accuracy.audit import AuditSettings, Candidate
        from hwbench.core.plugins import get_registry
        from hwbench.stress.protocols import standard_auditor

        real, late = builtins.__import__, set()

        def recording(name, *args, **kwargs):
            before = set(sys.modules)
            module = real(name, *args, **kwargs)
            if threading.current_thread() is not threading.main_thread():
                late.update(m for m in set(sys.modules) - before if m.startswith("hwbench"))
            return module

        builtins.__import__ = recording
        settings = AuditSettings(kernel="leaky-ring", quick=True, cache=False)
        standard_auditor(get_registry(), settings).run([Candidate("groq"), Candidate("tpu-v3")])
        print(sorted(late))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert "hwbench.accuracy.numerics.emulate" in IMPORTED_BY_RUNS
