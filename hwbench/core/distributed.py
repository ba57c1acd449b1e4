"""Several processes (hosts) as one run, on JAX's own distributed runtime (``jax.distributed``).

Every process of a multi-process run starts the same command. :func:`join` calls
:func:`jax.distributed.initialize` before JAX does anything else: with an explicit coordinator
(``HOST:PORT`` of process 0), process count and process id, or with what JAX detects in its
environment (``JAX_COORDINATOR_ADDRESS``, SLURM's ``srun``, Open MPI, Kubernetes, Cloud TPU).
JAX's devices are then every process's devices; a sharded run gives each process the slabs of its
own devices and gathers the results with JAX's multihost utilities. hwbench opens no socket and
defines no message format of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwbench.core.errors import UsageError

__all__ = ["Cluster", "is_leader", "join", "parse_coordinator"]


@dataclass(frozen=True)
class Cluster:
    """How this process joins a multi-process run.

    ``coordinator`` (``HOST:PORT``), ``num_processes`` and ``process_id`` are given together, or
    none of them and ``from_environment``: JAX reads them from its environment.
    """

    coordinator: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    from_environment: bool = False

    def __post_init__(self) -> None:
        explicit = (self.coordinator, self.num_processes, self.process_id)
        given = [v is not None for v in explicit]
        if any(given) and not all(given):
            raise UsageError(
                "--coordinator, --num-processes and --process-id go together (all three, or none and "
                "--distributed to let JAX read them from its environment: SLURM, Open MPI, JAX_COORDINATOR_ADDRESS)"
            )
        if self.coordinator is not None:
            parse_coordinator(self.coordinator)
        if self.num_processes is not None and (_not_int(self.num_processes) or self.num_processes < 1):
            raise UsageError(f"--num-processes must be a positive integer, got {self.num_processes!r}")
        n, i = self.num_processes, self.process_id
        if i is not None and n is not None and (_not_int(i) or not 0 <= i < n):
            raise UsageError(f"--process-id must be an integer in 0..{n - 1} (--num-processes {n}), got {i!r}")

    @property
    def explicit(self) -> bool:
        return self.coordinator is not None


def _not_int(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)


def parse_coordinator(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets, ``[::1]:1234``) as (host, port), or a UsageError."""
    host, sep, port = str(text).rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UsageError(f"--coordinator must be HOST:PORT with a port in 1..65535, got {text!r}")
    return host, int(port)


def join(cluster: Cluster) -> None:
    """Start JAX's distributed runtime for ``cluster`` (once per process; again is a no-op).

    Must come before any JAX computation in this process; a refusal by JAX (a missing value it
    could not detect, a coordinator it cannot reach in time) is a UsageError with JAX's reason.
    """
    from hwbench.core.engines.jax_engine import prepare_xla_flags

    prepare_xla_flags()  # (XLA reads its flags once, when the backend starts: before any device count)
    import jax

    if _initialized():
        return
    try:
        if cluster.explicit:
            jax.distributed.initialize(
                coordinator_address=cluster.coordinator,
                num_processes=cluster.num_processes,
                process_id=cluster.process_id,
            )
        else:
            jax.distributed.initialize()
    except (RuntimeError, ValueError, TypeError) as exc:
        raise UsageError(f"cannot join the distributed run: {exc}".splitlines()[0]) from None


def is_leader() -> bool:
    """Whether this process writes a multi-process run's outputs (process 0; any single process)."""
    import sys

    if "jax" not in sys.modules:
        return True
    import jax

    return not _initialized() or jax.process_index() == 0


def _initialized() -> bool:
    """Whether this process has joined JAX's distributed runtime."""
    import jax

    check = getattr(jax.distributed, "is_initialized", None)
    if check is not None:
        return bool(check())
    from jax._src import distributed  # JAX before is_initialized()

    return distributed.global_state.client is not None
