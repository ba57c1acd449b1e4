"""Nothing touching an input escapes the emulation; only compile-time constants are folded natively.

A kernel's inputs change between calls, so the device computes every operation on them, also
where the state is not involved (a parameter times a stimulus current). Arithmetic among Python
numbers and the workload's parameters alone is what the device's compiler folds on the host: it
stays native, and the audit report says so. Checked bit for bit on the numpy and the JAX engine,
against the rounding computed by hand with ``round_float``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from hwbench.accuracy.numerics.emulate import emulating_ops
from hwbench.accuracy.numerics.formats import RoundingMode, get_format
from hwbench.accuracy.numerics.native_parts import native_parts
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile, OpNumerics
from hwbench.accuracy.numerics.rounding import round_float
from hwbench.core.engine import load_inputs
from hwbench.core.engines.jax_engine import JaxEngine
from hwbench.core.engines.numpy_engine import NumpyEngine, NumpyOps
from hwbench.core.kernel import Kernel, KernelInfo, Workload
from hwbench.core.ops import OpClass, Ops

CELLS = 257
BF16 = get_format("bf16")
# products rounded to bf16 toward zero: a native fp32 product differs from it in most elements
PROFILE = NumericsProfile(
    name="bf16-products",
    device="test",
    mode="test",
    ops={OpClass.MUL: OpNumerics(format="bf16", rounding="toward-zero", source="test", confidence=Confidence.ASSUMED)},
)


class DrivenKernel(Kernel):
    """x' = x + g * I (a parameter times an input) + g * h (parameters alone) + 0.1 * 0.3 (numbers)."""

    info = KernelInfo(
        name="driven-test", summary="test", family="test", state_names=["x"], probe="x", op_classes=[OpClass.MUL]
    )

    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        rng = np.random.default_rng(seed)
        params = {"g": 1.7, "h": rng.uniform(0.5, 2.0, size)}
        return Workload(self.name, size, params=params, state0=np.zeros(size))

    def default_inputs(self, workload: Workload) -> dict[str, np.ndarray]:
        return {"I": np.random.default_rng(1).normal(10.0, 3.0, workload.size)}

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        return state + params["g"] * inputs["I"] + params["g"] * params["h"] + 0.1 * 0.3


def _expected(workload: Workload, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """One step from zero, with the product that touches the input rounded as the profile says and
    the constants' arithmetic folded in fp32 (the additions are the carrier's own, IEEE fp32)."""
    f32 = np.float32
    g, h, current = f32(workload.params["g"]), workload.params["h"].astype(f32), inputs["I"].astype(f32)
    drive = round_float(g * current, BF16, RoundingMode.TOWARD_ZERO)
    folded = g * h
    return ((f32(0) + drive) + folded) + f32(0.1 * 0.3)


def _run(engine: Any, workload: Workload, inputs: dict[str, np.ndarray]) -> np.ndarray:
    kernel = DrivenKernel()
    executor = engine.build(kernel, workload, dtype="float32", ops_wrapper=emulating_ops(PROFILE, counters=False))
    return np.asarray(executor.run(workload.state0, inputs, 1).state)


@pytest.mark.parametrize("engine", [NumpyEngine(), JaxEngine()], ids=lambda e: e.name)
def test_a_product_touching_an_input_is_rounded_bit_for_bit(engine: Any) -> None:
    kernel = DrivenKernel()
    workload = kernel.make_workload(CELLS)
    inputs = kernel.default_inputs(workload)
    got = _run(engine, workload, inputs)
    want = _expected(workload, inputs)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    # and the rounding is what made the difference: the native fp32 product gives other bits
    f32 = np.float32
    native = ((f32(0) + f32(1.7) * inputs["I"].astype(f32)) + f32(1.7) * workload.params["h"].astype(f32)) + f32(0.03)
    assert (got.view(np.uint32) != native.view(np.uint32)).mean() > 0.5


def test_inputs_reach_the_kernel_as_emulated_arrays_and_stay_native_without_emulation() -> None:
    raw = NumpyOps("float32")
    inputs = {"I": np.ones(3, np.float32), "index": np.arange(3)}
    assert load_inputs(raw, inputs) is inputs  # native ops: nothing to wrap
    emulating = emulating_ops(PROFILE, counters=False)(raw)
    loaded = load_inputs(emulating, inputs)
    assert type(loaded["I"]).__name__ == "EmuArray"
    assert loaded["index"] is inputs["index"]  # integer indices are exact: left alone


def test_the_native_parts_are_named_for_the_report() -> None:
    parts = native_parts(PROFILE)
    assert parts[0].startswith("arithmetic among compile-time constants alone")
    assert any("op classes the profile does not describe (add, div, exp," in p for p in parts)
    assert not any("reciprocal" in p for p in parts)  # no constant-reciprocal division in this profile
