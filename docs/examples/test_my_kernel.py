"""A user's own kernel, checked on two device profiles in CI (the worked example of docs/testing.md).

Run it with `python -m pytest docs/examples/test_my_kernel.py`; hwbench's own CI runs it too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwbench.api import Kernel, KernelInfo, OpClass, Ops, Workload, hookimpl
from hwbench.testing import assert_kernel_matches_cpu


class CableKernel(Kernel):
    """A passive cable: leaky compartments coupled to their neighbours, with a sigmoidal drive."""

    info = KernelInfo(
        name="cable",
        summary="passive cable with sigmoidal drive (docs example)",
        family="cable",
        state_names=["v"],
        probe="v",
        op_classes=[OpClass.ADD, OpClass.MUL, OpClass.DIV, OpClass.EXP, OpClass.GATHER],
        dt_ms=0.05,
        sample_every=20,
    )

    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        rng = np.random.default_rng(seed)
        idx = np.arange(size)
        src = np.concatenate([idx, idx])
        tgt = np.concatenate([(idx + 1) % size, (idx - 1) % size])
        order = np.argsort(tgt, kind="stable")
        params = {"tau": 10.0, "g": 0.5, "dt": 0.05, **overrides}
        arrays = {"src": src[order].astype(np.int32), "tgt": tgt[order].astype(np.int32)}
        return Workload(
            "cable", size, {"connected": True, "seed": seed}, params, arrays, rng.normal(-65.0, 2.0, (1, size))
        )

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        v = state[0]
        coupling = ops.scatter_add(
            params["g"] * (ops.gather(v, params["src"]) - ops.gather(v, params["tgt"])), params["tgt"], params["n"]
        )
        drive = 2.0 / (1 + ops.exp(-(v + 60.0) / 3.0))
        return ops.stack([v + params["dt"] * ((-65.0 - v) / params["tau"] + coupling + drive)])


class CablePlugin:
    @hookimpl
    def hwbench_kernels(self) -> list[Kernel]:
        return [CableKernel()]


@pytest.fixture
def cable(register_plugin):
    """Register the kernel for this test only (an installed plugin would use an entry point)."""
    return register_plugin(CablePlugin(), name="cable-plugin").kernel("cable")


@pytest.mark.parametrize(
    ("device", "mode", "max_mv"),
    [
        ("a100", "tensorrt", 0.05),  # TF32 reaches the gathers if TensorRT lowers them to matmul (assumed)
        ("groq", "default", 0.5),  # reduced-precision exp/div + fp16 one-hot gather: sub-mV expected
    ],
)
def test_cable_on_device_profiles(cable, device, mode, max_mv):
    worst = assert_kernel_matches_cpu("cable", device, mode=mode, size=32, samples=10, max_abs=max_mv)
    assert worst >= 0.0


@settings(max_examples=200, deadline=None)
@given(st.floats(-90.0, -40.0, width=32))
def test_groq_exp_error_is_bounded_by_its_reduced_width(v):
    """Property: on the Groq profile, the drive's exp is the fp32 exp rounded to the profile's
    reduced width, so it stays within half an ulp of that width of the exact value (+ fp32's)."""
    from hwbench.api import NumpyOps, emulating_ops, get_registry, unwrap

    profile = get_registry().device("groq").numerics("default")
    bits = profile.parameters["reduced_mantissa_bits"]
    ops = emulating_ops(profile, counters=False)(NumpyOps(np.float32))
    x = np.array([-(v + 60.0) / 3.0], dtype=np.float32)
    got = np.asarray(unwrap(ops.exp(ops.load(x))), dtype=np.float64)
    exact = np.exp(x.astype(np.float64))
    assert np.all(np.abs(got - exact) <= exact * (2.0 ** -(bits + 1) + 2.0**-23))
