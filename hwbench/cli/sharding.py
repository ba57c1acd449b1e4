"""The options that split a run over JAX devices and hosts (docs/scaling.md): ``run``, ``bench``, ``audit``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from hwbench.cli import validate
from hwbench.core.distributed import Cluster

SHARD_OPTION = click.option(
    "--shard", type=validate.SHARDS, default=None, help="Split the network over N JAX devices (slabs)."
)


def shard_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--shard`` and the options that join a multi-process run (docs/scaling.md); the command
    receives ``shard`` and ``cluster`` (a checked :class:`Cluster`, or None)."""

    @functools.wraps(command)
    def with_cluster(
        *args: Any,
        coordinator: str | None,
        num_processes: int | None,
        process_id: int | None,
        distributed: bool,
        **kw: Any,
    ) -> Any:
        return command(*args, cluster=cluster_from(coordinator, num_processes, process_id, distributed), **kw)

    options = (
        SHARD_OPTION,
        click.option(
            "--coordinator", type=validate.COORDINATOR, default=None, help="Multi-process run: process 0's HOST:PORT."
        ),
        click.option("--num-processes", type=validate.PROCESSES, default=None, help="Multi-process run: processes."),
        click.option("--process-id", type=validate.PROCESS_ID, default=None, help="Multi-process run: this one's id."),
        click.option(
            "--distributed", is_flag=True, help="Join a multi-process run JAX finds in the environment (SLURM, ...)."
        ),
    )
    wrapped: Callable[..., Any] = with_cluster
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def cluster_from(
    coordinator: str | None, num_processes: int | None, process_id: int | None, distributed: bool
) -> Cluster | None:
    """The multi-process run these options ask to join, or None (checked: a UsageError before any work)."""
    explicit = (coordinator, num_processes, process_id)
    if all(v is None for v in explicit) and not distributed:
        return None
    return Cluster(*explicit, from_environment=distributed)
