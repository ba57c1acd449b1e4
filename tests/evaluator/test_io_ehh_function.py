"""The io-ehh step written as a plain JAX function (benchmarks/io_ehh_function.py), audited through
the jaxpr front end, gives the built-in kernel's emulated run bit for bit: one evaluator, one
arithmetic, no second model of the device.

On a deterministic device (no random streams: the GroqChip's reduced-precision exp, division,
powers and compares, saturation, the one-hot gather and ordered scatter-add in fp16; TensorRT's
FMA contraction, TF32 one-hot gathers) a whole simulation loop matches, 40 steps in one
``lax.fori_loop``. On devices that draw random streams (error models, stochastic rounding) a loop
keys them by its iteration (the evaluator's per-loop streams), the kernel by its global step: one
step written without a loop matches there, every rounding keyed alike.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from hwbench.core.plugins import get_registry
from hwbench.evaluator.jaxpr.program import FunctionProgram
from hwbench.plugins.devices.arithmetic import device_arith

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "io_ehh_function.py"


def _module():
    spec = importlib.util.spec_from_file_location("io_ehh_function", PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("io_ehh_function", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("device", "mode", "steps"),
    [("groq", "default", 40), ("a100", "tensorrt", 40), ("a100", "cuda-fp32", 1), ("ipu", "fp16-sr", 1)],
)
def test_io_ehh_function_gives_the_kernels_bits(device: str, mode: str, steps: int) -> None:
    io = _module()
    registry = get_registry()
    kernel = registry.kernel("io-ehh")
    workload = kernel.make_workload(125, seed=42)
    state0 = workload.state0.astype(np.float32)
    current = np.zeros(125, np.float32)
    src, tgt = workload.arrays["src"], workload.arrays["tgt"]
    if steps == 1:
        fn = io.make_step(dict(workload.params), src, tgt, 125)
    else:
        fn = io.make_simulation(dict(workload.params), src, tgt, 125, steps)
    program = FunctionProgram(fn, (state0, current))
    got = program.compile(device_arith(registry, device, mode))(program.flat_inputs((state0, current))).outputs
    executor = registry.device(device).executor_for(kernel, workload, mode=mode, sample_every=steps)
    want = np.asarray(executor.run(state0, {"I_app": current}, 1).state, np.float32)
    assert not np.array_equal(want, state0)
    assert np.array_equal(got["out0"].view(np.uint32), want.view(np.uint32))
