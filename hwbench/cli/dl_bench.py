"""``hwbench bench --kernel gemm|conv2d|conv2d-bw|relu|lstm``: DL primitives' FLOPS, JSON, table, plot."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hwbench.cli.output import print_json, print_table, stderr, stdout
from hwbench.cli.record import record_result
from hwbench.core.errors import UsageError
from hwbench.core.plugins import Registry
from hwbench.core.results import BenchResult, Timing, write_json


@dataclass
class DLBenchOptions:
    kernel: str
    device: str
    engines: tuple[str, ...]
    repeats: int
    out: str | None
    as_json: bool
    dl_config: str | None = None
    dl_precision: str | None = None
    scale_down: bool = False
    max_gflop: float | None = None
    half_double_batch: bool = False


def run_dl_cli(registry: Registry, opts: DLBenchOptions) -> None:
    from hwbench.plugins.kernels.dl.bench import DLBenchPlan, resolve_configs, resolve_precisions, run_dl_bench
    from hwbench.plugins.kernels.dl.execute import ENGINES

    kernel = registry.kernel(opts.kernel)
    engines = opts.engines or ("jax",)
    bad = [e for e in engines if e not in ENGINES]
    if bad:
        raise UsageError(f"DL primitives run on engines {', '.join(ENGINES)}; got '{','.join(bad)}'")
    if opts.repeats < 1 or (opts.max_gflop is not None and opts.max_gflop <= 0):
        raise UsageError("--repeats must be >= 1 and --max-gflop > 0")
    plan = DLBenchPlan(
        kernel=opts.kernel,
        device=opts.device,
        configs=resolve_configs(kernel, opts.dl_config),  # type: ignore[arg-type]  # a DL-family kernel (run_dl_cli is called for those only)
        precisions=resolve_precisions(opts.dl_precision),
        engines=engines,
        repeats=opts.repeats,
        scale_down=opts.scale_down,
        max_gflop=opts.max_gflop,
        half_double_batch=opts.half_double_batch,
    )
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr,
        transient=opts.as_json,
    ) as progress:
        task = progress.add_task("bench", total=len(plan.cases()))

        def tick(label: str, timing: Timing | None) -> None:
            status = "skipped" if timing is None or timing.dl is None else f"{timing.dl.tflops * 1e3:.1f} GFLOPS"
            progress.update(task, advance=1, description=f"{label}: {status}")

        result = run_dl_bench(registry, plan, tick)
    _write(result, opts)


def emulated(t: Timing) -> bool:
    """Whether a DL timing times an emulation: of the device, or of a precision the host lacks (TF32)."""
    return t.execution == "emulated" or (t.dl is not None and t.dl.precision_execution == "emulated")


def _row(t: Timing) -> tuple[str, ...]:
    """One timed DL configuration as a table row (columns as in ``_write``'s table)."""
    d = t.dl
    assert d is not None, "a DL bench timing always carries its DL record"
    scaled = f" (b from {d.batch_scaled_from})" if d.batch_scaled_from else ""
    return (
        t.engine,
        "emul." if emulated(t) else "real",
        d.config,
        d.precision,
        "x".join(str(v) for v in d.shape.values()) + scaled,
        f"{t.setup_s:.2f}",
        f"{t.run_s * 1e3:.2f}",
        f"{d.flops / 1e9:.3g}",
        f"{d.tflops * 1e3:.1f}",
        f"{d.tflops_paper * 1e3:.1f}",
        "-" if d.fraction_of_peak is None else f"{d.fraction_of_peak:.1%}",
    )


def _write(result: BenchResult, opts: DLBenchOptions) -> None:
    from hwbench.cli.dl_plots import dl_bench_plot

    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = Path(opts.out or f"results/bench-{opts.device}-{opts.kernel}-{stamp}")
    write_json(result, out_dir / "bench.json")
    record_result(result)
    if result.timings:
        dl_bench_plot(result, out_dir / "bench.png")
    stderr.print(f"wrote {out_dir}/bench.json" + (" and bench.png" if result.timings else ""), highlight=False)
    for skip in result.skipped:
        stderr.print(
            f"[yellow]skipped[/yellow] {skip['engine']} {skip['config']} {skip['precision']}: {skip['reason']}",
            highlight=False,
            markup=True,
        )
    if opts.as_json:
        print_json(result)
        return
    rows = [_row(t) for t in result.timings]
    dims = "x".join(result.timings[0].dl.shape) if result.timings and result.timings[0].dl else ""
    print_table(
        f"{opts.kernel} on {opts.device}: min of {opts.repeats} runs (transfers included); shape {dims}",
        [
            "engine",
            "exec",
            "config",
            "precision",
            "shape run",
            "setup s",
            "run ms",
            "GFLOP",
            "GFLOPS",
            "GFLOPS paper f.",
            "of peak",
        ],
        rows,
    )
    peaks = {t.dl.peak_source for t in result.timings if t.dl and t.dl.peak_source}
    for source in sorted(peaks):
        stdout.print(f"  peak: {source}", highlight=False)
    stdout.print(
        "  GFLOPS: real operation count (1 FMA = 2 FLOPs); 'paper f.': the paper's printed formula", highlight=False
    )
    if any(emulated(t) for t in result.timings):
        stdout.print("  exec emul.: the arithmetic is emulated (TF32: inputs rounded, fp32 products); the times "
                     "are this host's, not those of a unit with that arithmetic", highlight=False)  # fmt: skip
