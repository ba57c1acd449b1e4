"""Speed of the DL primitives: FLOPS per configuration and precision, beside the device's peak.

The paper's protocol (Emani et al. 2022, Sec. IV): every primitive at every precision the
system supports; half precision optionally at twice the batch. Here: setup (allocation +
compilation) timed apart, then the minimum wall time of ``repeats`` runs, host transfer of the
output included. A configuration that does not fit host memory is refused with the estimate
(recorded as skipped), or with ``scale_down`` run at the largest batch (halving) that fits
memory and the ``max_gflop`` work cap; the timing then says which batch ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hwbench.core.errors import UnavailableError, UsageError, unknown_name
from hwbench.core.host import GIB, available_memory_bytes
from hwbench.core.ops import OpClass
from hwbench.core.plugins import Registry
from hwbench.core.results import BenchResult, DLTiming, Timing
from hwbench.plugins.kernels.dl import execute
from hwbench.plugins.kernels.dl.kernels import DLKernel, shape_bytes
from hwbench.plugins.kernels.dl.peak import peak_for
from hwbench.plugins.kernels.dl.shapes import CONVENTION, Shape

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
HALF = ("bf16", "fp16")
MEMORY_FRACTION = 0.5  # of MemAvailable: inputs, output, the engine's copies and the fp32 result
COPIES = 3  # host arrays + device (XLA) copies + transfer of the output


@dataclass
class DLBenchPlan:
    kernel: str = "gemm"
    device: str = "cpu"
    configs: Sequence[str] = ()
    precisions: Sequence[str] = ("fp32",)
    engines: Sequence[str] = ("jax",)
    repeats: int = 5
    seed: int = 0
    scale_down: bool = False
    max_gflop: float | None = None
    half_double_batch: bool = False
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def cases(self) -> list[Case]:
        return [Case(e, c, p) for e in self.engines for c in self.configs for p in self.precisions]


@dataclass(frozen=True)
class Case:
    engine: str
    config: str
    precision: str


def resolve_configs(kernel: DLKernel, spec: str | None) -> list[str]:
    """'deepbench' (or none): the paper's four; else a comma list of names."""
    if not spec or spec == "deepbench":
        return list(kernel.configs)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    for name in names:
        if name not in kernel.configs:
            raise unknown_name(f"configuration of kernel '{kernel.name}'", name, ["deepbench", *kernel.configs])
    return names


def resolve_precisions(spec: str | None) -> list[str]:
    names = [s.strip() for s in (spec or "fp32").split(",") if s.strip()]
    bad = [n for n in names if n not in PRECISIONS]
    if bad or not names:
        raise UsageError(f"unknown precision '{','.join(bad)}'; choose from: {', '.join(PRECISIONS)}")
    return names


def fit(shape: Shape, itemsize: int, patches: bool, plan: DLBenchPlan) -> Shape:
    """The shape to run: refused (UnavailableError with the estimate) or scaled down by halving."""
    budget = MEMORY_FRACTION * available_memory_bytes()
    cap = None if plan.max_gflop is None else plan.max_gflop * 1e9

    def need(s: Shape) -> float:
        return COPIES * shape_bytes(s, itemsize, patches=patches)

    def too_big(s: Shape) -> bool:
        return need(s) > budget or (cap is not None and s.flops().real > cap)

    if not too_big(shape):
        return shape
    if not plan.scale_down:
        raise UnavailableError(
            f"{shape.describe()} needs about {need(shape) / GIB:.1f} GiB ({shape.flops().real / 1e9:,.0f} GFLOP); "
            f"limit {budget / GIB:.1f} GiB{'' if cap is None else f', {plan.max_gflop:g} GFLOP'} "
            "(use --scale-down to run a smaller batch)"
        )
    scaled = shape
    while too_big(scaled) and scaled.batch > 1:
        scaled = scaled.with_batch(scaled.batch // 2)
    if too_big(scaled):
        raise UnavailableError(
            f"{shape.describe()} does not fit even at batch 1 ({need(scaled) / GIB:.2g} GiB, "
            f"{scaled.flops().real / 1e9:.3g} GFLOP; limit {budget / GIB:.1f} GiB"
            f"{'' if cap is None else f', {plan.max_gflop:g} GFLOP'})"
        )
    return scaled


def _wrapper(precision: str, registry: Registry) -> Any:
    """TF32 on a host without it: the A100 TensorRT profile's matrix-unit entries only (emulated)."""
    if precision != "tf32":
        return None
    from hwbench.accuracy.numerics.emulate import emulating_ops

    profile = registry.device("a100").numerics("tensorrt")
    assert profile is not None
    keep = {c: profile.ops[c] for c in (OpClass.MATMUL_INPUT, OpClass.MATMUL_ACCUMULATE)}
    return emulating_ops(profile.model_copy(update={"ops": keep, "name": "tf32-matmul"}), counters=False)


def time_case(registry: Registry, plan: DLBenchPlan, engine: str, config: str, precision: str) -> Timing:
    kernel = registry.kernel(plan.kernel)
    assert isinstance(kernel, DLKernel)
    dtype_name = execute.PRECISION_DTYPES[precision]
    if precision == "tf32" and OpClass.MATMUL_INPUT not in kernel.info.op_classes:
        raise UnavailableError(f"TF32 changes matrix products only; {kernel.name} at tf32 is its fp32 run")
    shape = kernel.shape(config)
    if plan.half_double_batch and precision in HALF:
        shape = shape.with_batch(2 * shape.batch)
    itemsize = execute.np_dtype(dtype_name).itemsize
    ran = fit(shape, max(itemsize, 4), engine == "numpy", plan)
    scaled_from = shape.batch if ran.batch != shape.batch else None
    workload = kernel.make_workload(ran.batch, config=config, seed=plan.seed, scaled_from=scaled_from)
    t0 = time.perf_counter()
    run = execute.runner(kernel, workload, engine, dtype_name, _wrapper(precision, registry))
    run()  # compile and warm up: setup
    setup_s = time.perf_counter() - t0
    samples = []
    for _ in range(max(1, plan.repeats)):
        t1 = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t1)
    return _record(registry, plan, kernel, workload, engine, precision, setup_s, samples)


def _record(
    registry: Registry,
    plan: DLBenchPlan,
    kernel: DLKernel,
    workload: Any,
    engine: str,
    precision: str,
    setup_s: float,
    samples: list[float],
) -> Timing:
    best = min(samples)
    flops = kernel.flops(workload)
    steps = kernel.steps(workload)
    spec = registry.device(plan.device).spec
    peak = peak_for(spec, precision)
    tflops = flops.real / best / 1e12
    dl = DLTiming(
        config=workload.meta["config"],
        shape=workload.meta["shape"],
        precision=precision,
        precision_execution="emulated" if precision == "tf32" else "real",
        batch_scaled_from=workload.meta["batch_scaled_from"],
        flops=flops.real,
        flops_paper=flops.paper,
        flops_convention=CONVENTION,
        tflops=tflops,
        tflops_paper=flops.paper / best / 1e12,
        peak_tflops=None if peak is None else peak.tflops,
        peak_source=None if peak is None else peak.source,
        fraction_of_peak=None if peak is None else tflops / peak.tflops,
    )
    return Timing(
        kernel=kernel.name,
        device=plan.device,
        mode="default",
        execution="real",
        engine=engine,
        dtype=execute.PRECISION_DTYPES[precision],
        ncells=workload.size,
        ngj=0,
        connected=False,
        setup_s=setup_s,
        run_s=best,
        run_s_all=samples,
        simulated_ms=None,
        steps=steps,
        us_per_step=best / steps * 1e6,
        rtf=None,
        cell_steps_per_s=workload.size * steps / best,
        dl=dl,
    )


def run_dl_bench(
    registry: Registry, plan: DLBenchPlan, progress: Callable[[str, Timing | None], None] | None = None
) -> BenchResult:
    """Every (engine, configuration, precision); a refused one is recorded with its reason."""
    if registry.device(plan.device).spec.kind != "cpu":
        raise UsageError(
            f"DL speed is measured on real hardware; '{plan.device}' is not present here (its numerics can be "
            f"audited: hwbench audit --kernel {plan.kernel} --device {plan.device})"
        )
    timings: list[Timing] = []
    for case in plan.cases():
        engine, config, precision = case.engine, case.config, case.precision
        label = f"{engine} {config} {precision}"
        try:
            timing = time_case(registry, plan, engine, config, precision)
        except UnavailableError as exc:
            plan.skipped.append({"engine": engine, "config": config, "precision": precision, "reason": str(exc)})
            timing = None
        except UsageError as exc:  # an engine without this dtype: a fact about the engine, not a bad request
            if "has no" not in str(exc):
                raise
            plan.skipped.append({"engine": engine, "config": config, "precision": precision, "reason": str(exc)})
            timing = None
        if timing is not None:
            timings.append(timing)
        if progress:
            progress(label, timing)
    protocol = {
        "kernel": plan.kernel,
        "device": plan.device,
        "configs": list(plan.configs),
        "precisions": list(plan.precisions),
        "engines": list(plan.engines),
        "repeats": plan.repeats,
        "seed": plan.seed,
        "scale_down": plan.scale_down,
        "max_gflop": plan.max_gflop,
        "half_double_batch": plan.half_double_batch,
        "flops_convention": CONVENTION,
        "source": "Emani et al., PMBS 2022, Sec. IV (DeepBench primitives); docs/dl-primitives.md",
    }
    return BenchResult(protocol=protocol, timings=timings, skipped=plan.skipped)
