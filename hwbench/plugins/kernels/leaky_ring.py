"""``leaky-ring``: the smallest kernel that exercises every part of the ops contract.

Leaky units on a ring with diffusive coupling through gather / scatter-add, an exponential
nonlinearity and a threshold. It exists to test engines, plugins and emulation quickly; it
models nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.kernel import Kernel, KernelInfo, ParamRange, SpikeRule, Workload
from hwbench.core.ops import OpClass, Ops
from hwbench.core.protocol_facts import AuditFacts, AuditFloors, StressFacts, ValidationFacts


class LeakyRingKernel(Kernel):
    info = KernelInfo(
        name="leaky-ring",
        summary="Toy: leaky units on a ring, diffusive gather/scatter coupling (tests only)",
        family="toy",
        state_names=["v", "w"],
        probe="v",
        op_classes=[OpClass.ADD, OpClass.MUL, OpClass.DIV, OpClass.EXP, OpClass.GATHER, OpClass.STORE],
        dt_ms=0.1,
        sample_every=10,
        dt_param="dt",
        default_size=64,
        # Small versions of the simulation audit's protocols, so tests run them on a second kernel.
        audit=AuditFacts(
            validation=ValidationFacts(size=64, quick_size=16, ms=200.0, quick_ms=50.0, drive="I_app"),
            stress=StressFacts(
                size=16,
                drive="I_app",
                amplitude_mean=0.5,
                amplitude_sd=0.1,
                fraction=0.5,
                warmup_ms=50.0,
                pulses=3,
                pulse_ms=5.0,
                rest_ms=20.0,
                quick_warmup_ms=10.0,
                quick_pulses=2,
                heterogeneous={"tau": (4.0, 2.0)},
            ),
            # its probe v is dimensionless, of order 1: the same relative floors as io-ehh's in mV
            sweep_protocols=["stress"],
            floors=AuditFloors(max_outside_spikes=1e-3, stable_spread=1.0, source="toy kernel (tests only)"),
        ),
    )
    spike_rule = SpikeRule(row=0, threshold=0.5)
    parameter_ranges: ClassVar[dict[str, ParamRange]] = {
        "tau": ParamRange(0.0, 1e6, low_open=True, unit="ms"),
        "g": ParamRange(0.0, 1e3),
        "dt": ParamRange(0.0, 1.0, low_open=True, unit="ms", per_cell=False),
        "drive": ParamRange(-1e3, 1e3),
    }

    def make_workload(self, size: int, *, connected: bool = True, seed: int = 0, **overrides: Any) -> Workload:
        import numpy as np

        rng = np.random.default_rng(seed)
        idx = np.arange(size)
        src = np.concatenate([idx, idx]) if connected else np.zeros(0, np.int64)
        tgt = np.concatenate([(idx + 1) % size, (idx - 1) % size]) if connected else np.zeros(0, np.int64)
        order = np.argsort(tgt, kind="stable")
        params: dict[str, Any] = {"tau": 5.0, "g": 0.2, "dt": 0.1, "drive": 0.12}
        unknown = sorted(set(overrides) - set(params))
        if unknown:
            raise UsageError(f"leaky-ring has no parameter {', '.join(unknown)}; choose from: {', '.join(params)}")
        self.check_parameters(overrides)
        params.update(overrides)
        state0 = np.stack([rng.normal(0.0, 0.3, size), np.zeros(size)])
        return Workload(
            "leaky-ring",
            size,
            {"connected": connected, "seed": seed},
            params,
            {"src": src[order].astype(np.int32), "tgt": tgt[order].astype(np.int32)},
            state0,
        )

    def default_inputs(self, workload: Workload) -> dict[str, np.ndarray]:
        import numpy as np

        return {"I_app": np.zeros(workload.size)}

    def step(self, ops: Ops, state: Any, params: dict[str, Any], inputs: dict[str, Any], t: Any) -> Any:
        v, w = state[0], state[1]
        n = params["n"]
        diff = ops.gather(v, params["src"]) - ops.gather(v, params["tgt"])
        coupling = ops.scatter_add(params["g"] * diff, params["tgt"], n)
        gain = 1 / (1 + ops.exp(-(v - 0.2) / 0.1))
        dv = -v / params["tau"] + params["drive"] * gain - w + coupling + inputs["I_app"]
        dw = (0.5 * v - w) / (4 * params["tau"])
        dt = params["dt"]
        return ops.stack([v + dt * dv, w + dt * dw])

    def flops_per_step(self, workload: Workload) -> float:
        return 20.0 * workload.size + 4.0 * len(workload.arrays["src"])

    def memory_estimate(self, size: int, *, connected: bool = True) -> int:
        return 8 * size * (2 + 4 + (4 if connected else 0))


def kernels() -> list[Kernel]:
    return [LeakyRingKernel()]
