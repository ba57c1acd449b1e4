"""``hwbench.bench``: the published performance protocol (sizes x connectivity x engines), as a library call.

``hwbench bench`` is a thin layer over :func:`bench_plan` (the CLI parses options, renders the table).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hwbench.core import interrupts
from hwbench.core.audit_protocol import STUDY_SEED
from hwbench.core.bench import DEFAULT_EDGES, PUBLISHED_EDGES
from hwbench.core.errors import UnavailableError, UsageError
from hwbench.library.progress import Progress, ProgressChoice, make_progress
from hwbench.library.store import record_if
from hwbench.plugins import DEFAULT_KERNEL

if TYPE_CHECKING:
    from hwbench.core.bench import BenchPlan
    from hwbench.core.kernel import Kernel
    from hwbench.core.plugins import Registry
    from hwbench.core.results import BenchResult, Timing

BENCH_OUTPUTS = ("bench.json", "bench.png")
MEMORY_FRACTION = 0.8  # of the memory available when the bench starts (as the runner's guard)


@dataclass
class Bench:
    """A bench's outcome: ``result`` (the published bench JSON's model) and the files written.

    Attributes not found here are the result's (``bench.timings``); it renders in Jupyter."""

    result: BenchResult
    out_dir: Path
    written: list[Path] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("report", "result", "data"):  # not set yet (copy, unpickle)
            raise AttributeError(name)
        return getattr(self.result, name)

    def _repr_html_(self) -> str:
        from hwbench.library.display import document_html

        return document_html(self.result.model_dump(mode="json", by_alias=True), "bench")


def bench(
    kernel: str = DEFAULT_KERNEL,
    device: str | Sequence[str] = "cpu",
    *,
    mode: str | None = None,
    engines: Sequence[str] = (),
    cells: Sequence[int] | None = None,
    full: bool = False,
    connectivity: Sequence[bool] = (False, True),
    ms: float = 100.0,
    repeats: int = 5,
    seed: int = STUDY_SEED,
    out: str | Path | None = None,
    energy: bool = True,
    energy_model: bool = False,
    store: str | bool = False,
    progress: ProgressChoice | Progress = "auto",
    shard: int | None = None,
) -> Bench:
    """Time ``kernel`` on ``device`` (one ``NAME[:MODE]``, or several) over sizes (``cells``: cell
    counts; default the study's short list, ``full`` its whole list) and connectivity; min of
    ``repeats`` runs of ``ms`` ms each.

    A size that does not fit this host's memory is refused before anything runs (UnavailableError,
    with the estimate). Writes bench.json and bench.png into ``out`` (default
    ``results/bench-DEVICE-KERNEL-STAMP``); ``store`` records the result (``True``: the default
    store, or a URL); ``shard`` splits every network over that many JAX devices (docs/scaling.md).
    """
    from hwbench.core.bench import BenchPlan
    from hwbench.core.plugins import get_registry

    registry = get_registry()
    k = registry.kernel(kernel)  # unknown names fail before any work
    if k.info.family == "dl":
        raise UsageError(f"hwbench.bench does not take DL primitives yet; use 'hwbench bench --kernel {kernel}'")
    targets = resolve_devices(registry, k, [device] if isinstance(device, str) else list(device), mode, tuple(engines))
    connectivity = networks(k, connectivity)
    size_list = list(cells) if cells else [n**3 for n in (PUBLISHED_EDGES if full else DEFAULT_EDGES)]
    check_sizes(k, size_list, connectivity, ms, shard)
    plan = BenchPlan(kernel=kernel, devices=targets, engines=tuple(engines) or (None,), sizes=size_list,
                     connectivity=connectivity, simulated_ms=ms, repeats=repeats, energy=energy,
                     energy_model=energy_model, seed=seed, shards=shard)  # fmt: skip
    names = "+".join(d for d, _ in targets)
    result = bench_plan(registry, plan, default_out(out, names, kernel), make_progress(progress))
    record_if(store, result.result)
    return result


def default_out(out: str | Path | None, device: str, kernel: str) -> Path:
    """``out``, else ``results/bench-DEVICE-KERNEL-STAMP``."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(out or f"results/bench-{device}-{kernel}-{stamp}")


def resolve_devices(
    registry: Registry, kernel: Kernel, devices: Sequence[str], mode: str | None, engines: tuple[str, ...]
) -> list[tuple[str, str | None]]:
    """(name, mode) per ``NAME[:MODE]``, each checked now (:func:`check_device`); ``mode`` is the
    mode of a single device (several take theirs as NAME:MODE)."""
    if not devices:
        raise UsageError("give at least one --device")
    if mode and len(devices) > 1:
        raise UsageError("with several --device, give each its mode as NAME:MODE, not --mode")
    targets: list[tuple[str, str | None]] = []
    for spec in devices:
        name, _, spec_mode = spec.partition(":")
        if spec_mode and mode:
            raise UsageError(f"--device {spec} names a mode already; drop --mode {mode}")
        target = (name, spec_mode or mode)
        if target in targets:
            raise UsageError(f"--device {spec} is given twice")
        check_device(registry, kernel, name, target[1], engines)
        targets.append(target)
    return targets


def check_device(registry: Registry, kernel: Kernel, device: str, mode: str | None, engines: tuple[str, ...]) -> None:
    """Unknown device, mode or engine names, and a device that runs no size of the kernel: refused now."""
    from hwbench.core.runner import resolve_mode

    dev = registry.device(device)
    support = dev.supports(kernel, None, mode=resolve_mode(dev, mode))
    if not support.ok:
        raise UnavailableError(f"device '{dev.name}' cannot run {kernel.name}: {support.reason}")
    for name in engines:
        registry.engine(name)


def networks(kernel: Kernel, connectivity: Sequence[bool]) -> tuple[bool, ...]:
    """The networks to time (False: unconnected, True: connected). For a kernel without connections
    (:func:`~hwbench.core.runner.disconnectable`) both are one network, timed once as connected;
    unconnected alone is refused for it."""
    from hwbench.core.runner import check_disconnectable, disconnectable

    asked = tuple(dict.fromkeys(bool(c) for c in connectivity))
    if not asked:
        raise UsageError("connectivity must name at least one of False (unconnected) and True (connected)")
    if False not in asked or disconnectable(kernel):
        return asked
    if True not in asked:
        check_disconnectable(kernel)
    return (True,)


def check_sizes(
    kernel: Kernel, sizes: list[int], connectivity: tuple[bool, ...], ms: float, shard: int | None = None
) -> None:
    """Every size is checked before any runs: one the kernel cannot build (or split over ``shard``
    devices) is a usage error; one whose workload, run and traces do not fit this host's memory
    (the kernel's estimate plus the traces', against 80 % of the memory available now) is refused,
    all such sizes named with their estimates, so a long grid never stops part-way for want of memory."""
    from hwbench.core.host import GIB, available_memory_bytes
    from hwbench.core.runner import check_shards, host_memory_estimate, trace_bytes
    from hwbench.library.run import samples_for

    nsamples = samples_for(kernel, ms)
    for size in sizes:
        for connected in connectivity:
            kernel.check_size(size, connected=connected)
            check_shards(kernel, size, shard, connected=connected)
    have = available_memory_bytes()
    too_big = []
    for size in sizes:
        for connected in connectivity:
            need = host_memory_estimate(kernel, size, connected) + trace_bytes(size, nsamples)
            if need > MEMORY_FRACTION * have:
                kind = "connected" if connected else "unconnected"
                too_big.append(f"{size:,} cells {kind} need about {need / GIB:.3g} GiB")
    if too_big:
        raise UnavailableError(
            f"{kernel.name}: {len(too_big)} configuration(s) do not fit this host's memory: {'; '.join(too_big)} "
            f"(the kernel's estimate plus {ms:g} ms of traces); this host has {have / GIB:.3g} GiB available "
            f"(limit {MEMORY_FRACTION:.0%} of it); nothing was run: drop those sizes or shorten --ms"
        )


def bench_plan(registry: Registry, plan: BenchPlan, out_dir: Path, progress: Progress) -> Bench:
    """Run the plan into ``out_dir`` (locked and checked before any run); bench.json and bench.png
    appear together, and only if something was measured."""
    from hwbench.core.bench import run_bench
    from hwbench.core.files import OutputDir
    from hwbench.core.results import write_json
    from hwbench.library.plots import bench_plot

    with OutputDir(out_dir, BENCH_OUTPUTS, "bench") as folder:
        with progress:
            progress.add("bench", len(plan.configs()))

            def tick(label: str, timing: Timing | None) -> None:
                interrupts.check()
                status = "skipped" if timing is None else f"{timing.us_per_step:.1f} us/step"
                progress.advance("bench", 1, description=f"{label}: {status}")

            result = run_bench(registry, plan, tick)
        if not result.timings:
            reasons = "; ".join(dict.fromkeys(f"{s['ncells']:,} cells: {s['reason']}" for s in result.skipped))
            raise UnavailableError(f"every configuration was skipped, nothing measured ({reasons})")
        written = [write_json(result, folder.path / "bench.json", folder.files)]
        written.append(bench_plot(result, folder.path / "bench.png", folder.files))
    return Bench(result, out_dir, written)
