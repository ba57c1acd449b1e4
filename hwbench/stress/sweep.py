"""Running a sweep on Dask: every cell an ordinary audit, sent as one task.

The default is an in-process :class:`distributed.LocalCluster` (one worker *process* per core, one
thread each: an audit is a Python loop around XLA calls, so processes, not threads, use the
cores); ``scheduler="tcp://host:port"`` uses an existing cluster instead. Dask owns the hard parts:
a worker that dies mid-cell has its task rescheduled on another worker by the scheduler (up to
``distributed.scheduler.allowed-failures`` times), cancelled futures are dropped from the
cluster, and a worker process keeps its registry and JAX compile cache for every cell it runs
(the persistent compile cache directory is shared by all workers on a machine).

The driver records a cell in the ledger only when its audit has finished, so Ctrl-C (which
cancels every pending future) leaves whole records of the finished cells, and ``resume`` skips them.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hwbench.core.errors import UnavailableError, UsageError
from hwbench.stress.sweep_cell import CellOutcome, CellSettings, outcome_of, run_cell
from hwbench.stress.sweep_ledger import SweepLedger
from hwbench.stress.sweep_spec import Cell

WORKER_WAIT_S = 60


@dataclass
class Tally:
    """Progress of a sweep, as the progress bar shows it."""

    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    skipped: int = 0  # recorded by an earlier run (resume)


Monitor = Callable[[Tally], None]


@dataclass
class ClusterInfo:
    """The cluster a sweep ran on, for the result file."""

    kind: str  # "local" or "scheduler"
    address: str
    workers: int


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[tuple[Any, ClusterInfo]]:
    """A Dask client: a new LocalCluster (default: one single-threaded worker process per core), or
    one connected to ``scheduler``. Closed (and a local cluster shut down) on exit."""
    from distributed import Client, LocalCluster

    if scheduler:
        if workers is not None:
            raise UsageError("--workers applies to the local cluster only; an existing cluster has its own workers")
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise UnavailableError(f"cannot connect to the Dask scheduler at {scheduler}: {exc}") from None
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            client.close()
            raise UnavailableError(
                f"the Dask scheduler at {scheduler} has no workers after {WORKER_WAIT_S} s "
                f"(start one with 'dask worker {scheduler}')"
            ) from None
        cluster = None
    else:
        n = workers or os.cpu_count() or 1
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    rpc = client.scheduler
    assert rpc is not None and rpc.address is not None  # a Client made synchronously is connected
    try:
        info = ClusterInfo(
            kind="scheduler" if scheduler else "local",
            address=rpc.address,
            workers=len(client.scheduler_info().get("workers", {})),
        )
        yield client, info
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_sweep(
    client: Any,
    cells: list[Cell],
    settings: CellSettings,
    ledger: SweepLedger,
    *,
    monitor: Monitor | None = None,
    poll_s: float = 0.25,
) -> list[CellOutcome]:
    """Run every cell not yet in ``ledger`` on ``client``'s cluster; outcomes in the order of ``cells``.

    A KeyboardInterrupt (or any error) cancels every pending future before it propagates.
    """
    recorded = ledger.recorded()
    outcomes = {c.key(): outcome_of(c, recorded[c.key()]) for c in cells if c.key() in recorded}
    tally = Tally(total=len(cells), skipped=len(outcomes), done=len(outcomes))
    run_id = uuid.uuid4().hex[:8]
    futures = {
        client.submit(run_cell, cell, settings, key=f"hwbench-cell-{run_id}-{i}", pure=False): cell
        for i, cell in enumerate(c for c in cells if c.key() not in outcomes)
    }
    run = _Run(client, futures, ledger, tally, outcomes, monitor, pending=set(futures))
    try:
        with _deferred_interrupt() as interrupted:
            run.drive(poll_s, interrupted)
    except BaseException:
        client.cancel(list(run.pending), force=True)
        raise
    return [outcomes[c.key()] for c in cells]


@dataclass
class _Run:
    """The driver's state while cells are on the cluster."""

    client: Any
    futures: dict[Any, Cell]
    ledger: SweepLedger
    tally: Tally
    outcomes: dict[str, CellOutcome]
    monitor: Monitor | None
    pending: set[Any] = field(default_factory=set)

    def drive(self, poll_s: float, interrupted: threading.Event) -> None:
        """Collect and record finished cells and report progress until none is pending; a Ctrl-C
        (``interrupted``) becomes KeyboardInterrupt here, between calls to the scheduler."""
        if self.monitor:
            self.monitor(self.tally)
        while self.pending:
            finished = self._collect_finished()
            self.tally.running = _running(self.client, self.pending) if self.pending else 0
            if self.monitor:
                self.monitor(self.tally)
            if self.pending and not finished:
                interrupted.wait(poll_s)
            if interrupted.is_set():
                raise KeyboardInterrupt

    def _collect_finished(self) -> int:
        finished = [f for f in self.pending if f.done()]
        self.pending.difference_update(finished)
        for future in finished:
            outcome = _collect(future, self.futures[future])
            self.outcomes[outcome.key] = outcome
            if outcome.status == "done" and outcome.report is not None:
                self.ledger.record(outcome.key, outcome.report)
                self.tally.done += 1
            else:
                self.tally.failed += 1
        return len(finished)


@contextmanager
def _deferred_interrupt() -> Iterator[threading.Event]:
    """Ctrl-C sets an event that :meth:`_Run.drive` turns into KeyboardInterrupt between its calls
    to the scheduler: an interrupt inside one of distributed's synchronous calls leaves its event
    loop thread printing a NameError (``distributed.utils.sync`` cancels a future it never assigned)."""
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return
    previous = signal.signal(signal.SIGINT, lambda *_: event.set())
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)


def _collect(future: Any, cell: Cell) -> CellOutcome:
    """The outcome of a finished future; a task that raised (or whose workers kept dying) is failed."""
    if future.status == "finished":
        outcome: CellOutcome = future.result()  # what run_cell returned on the worker
        return outcome
    try:
        exc = future.exception()
    except Exception as err:  # a cancelled future raises here
        exc = err
    return CellOutcome(key=cell.key(), cell=cell, status="failed", reason=f"{exc.__class__.__name__}: {exc}")


def _running(client: Any, pending: set[Any]) -> int:
    """Cells the workers are executing now: the scheduler's processing sets (which also hold a task
    queued on a worker behind the running one), capped by the cluster's threads; 0 if it cannot say."""
    keys = {f.key for f in pending}
    try:
        processing = client.processing()
        slots = int(sum(client.nthreads().values()))
    except Exception:
        return 0
    return min(slots, sum(1 for tasks in processing.values() for key in tasks if key in keys))
