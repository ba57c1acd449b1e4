"""A third-party audit protocol (plugin contract 3): the probe's final range, candidate against
the CPU fp32 reference.

A protocol is a plugin like a device: an :class:`hwbench.api.AuditProtocol` returned by the
``hwbench_audit_protocols`` hook. It declares what it needs and judges (``info``), which kernels
it applies to (``refusal``), and runs: ``ctx.baseline`` executes the reference (so a cache of
baselines has one home), each candidate runs on its device, and the verdicts come back as
:class:`hwbench.api.ProtocolReport` records that ``hwbench audit`` renders and records.
"""

from __future__ import annotations

import time

import numpy as np

from hwbench import api

STEPS = 20
TOLERANCE = 0.01  # relative range difference a candidate may show (the protocol's floor)


class FinalRange(api.AuditProtocol):
    info = api.ProtocolInfo(
        name="example-range",
        summary="the probe's range over a short free run, candidate against the CPU fp32 reference",
        applies_to="time-stepped kernels (a dt_ms in their record)",
        runs=["reference: CPU fp32", "candidate: each device and mode"],
        compares=[
            api.Compared(header="range", path="deviation.range"),
            api.Compared(header="rel. diff", path="deviation.range_diff"),
        ],
        floor=f"a fixed relative tolerance of {TOLERANCE:g}",
        verdict=f"PASS when the range differs from the reference's by at most {TOLERANCE:g} (relative), else FAIL",
        automatic=False,  # runs when named (--protocol example-range), not in every audit of a kernel
    )

    def refusal(self, kernel: api.Kernel) -> str | None:
        return None if kernel.info.dt_ms is not None else "it runs time-stepped kernels only"

    def _range(self, ctx: api.AuditContext, device: str, mode: str) -> tuple[float, float]:
        kernel = ctx.kernel
        workload = kernel.make_workload(min(kernel.info.default_size, 64), seed=ctx.settings.seed)
        executor = ctx.registry.device(device).executor(api.RunRequest(kernel, workload, mode=mode))
        t0 = time.perf_counter()
        probes = np.asarray(executor.run(workload.state0, kernel.default_inputs(workload), STEPS).probes)
        return float(probes.max() - probes.min()), time.perf_counter() - t0

    def run(self, ctx: api.AuditContext) -> list[api.ProtocolReport]:
        ref, ref_s = ctx.baseline(
            (self.name, ctx.kernel.name, ctx.settings.seed), lambda: self._range(ctx, "cpu", "fp32")
        )
        runs = [
            api.RunSummary(
                label="reference",
                role="reference",
                device="cpu",
                mode="fp32",
                execution="real",
                engine="-",
                setup_s=0.0,
                run_s=ref_s,
                deviation={"range": ref},
            )
        ]
        verdicts = []
        for c in ctx.candidates:
            device = ctx.registry.device(c.device)
            mode = c.mode or device.default_mode
            got, secs = self._range(ctx, c.device, mode)
            diff = abs(got - ref) / max(abs(ref), 1e-30)
            runs.append(
                api.RunSummary(
                    label=f"{c.device} [{mode}]",
                    role="candidate",
                    device=c.device,
                    mode=mode,
                    execution="emulated" if device.probe().status == "emulated" else "real",
                    engine="-",
                    setup_s=0.0,
                    run_s=secs,
                    deviation={"range": got, "range_diff": diff},
                )
            )
            verdict = api.Verdict.PASS if diff <= TOLERANCE else api.Verdict.FAIL
            verdicts.append(
                api.CandidateVerdict(
                    device=c.device,
                    mode=mode,
                    verdict=verdict,
                    score=diff / TOLERANCE,
                    reasons=[f"range {got:.6g} vs {ref:.6g} (relative {diff:.3g})"],
                )
            )
        return [
            api.ProtocolReport(
                name=self.name,
                protocol=self.name,
                description=f"{STEPS} free steps",
                probe_unit=ctx.kernel.info.probe_unit,
                sample_ms=0.0,
                regime="-",
                floor={"range_diff": TOLERANCE},
                runs=runs,
                verdicts=verdicts,
                verdict=api.combine([v.verdict for v in verdicts]),
            )
        ]
