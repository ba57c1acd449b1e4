"""Freeze every built-in device mode's emulated io-ehh output as bit-exact fixtures.

The emulation is made faster by rewriting how it computes (issue 21), never what: every
emulating device mode must give the same float32 bits as before. This script runs a short
io-ehh run per mode on the JAX engine (64 cells connected, seeded network, a current pulse into
a third of the cells so that cells spike, then a quiet stretch) and stores the probes, spike
steps and final state; ``tests/accuracy/test_emulation_fixtures.py`` re-runs each mode with the
same helper and compares the uint32 views of the float results.

Covered: every (device, mode) whose profile changes io-ehh's arithmetic on the JAX engine
(a100 cuda-fp32/tensorrt, tpu-v3 default/high/highest, ipu fp32/fp16-sr, groq
default/fp32-exact-vector), plus groq default, tpu-v3 default and ipu fp16-sr with the per-step
event counters on (the forensic replay's configuration). loihi / spinnaker refuse io-ehh, so they
have nothing to freeze. Since issue 30, a100 cuda-fp32 and ipu fp32 emulate (FMA contraction,
exp and division error models) instead of compiling the native program.

    python scripts/make_emulation_fixtures.py            # writes tests/data/emulation_fixtures.npz
    python scripts/make_emulation_fixtures.py --out /tmp/new.npz   # elsewhere, to compare first

Regenerate only when a change is *meant* to alter emulated results, and say why in the commit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "emulation_fixtures.npz"
CELLS = 64
SEED = 0
EARLY_SAMPLES = 4  # 4 ms of I_app pulse (sample windows of 40 steps = 1 ms), full state kept ...
PULSE_SAMPLES = 8  # ... 8 ms more of it (ipu fp16-sr goes non-finite in this stretch) ...
QUIET_SAMPLES = 8  # ... then 8 ms without
PULSE_UA = 12.0


@dataclass(frozen=True)
class ModeCase:
    """One emulated configuration: a device, its mode, and whether counters are on."""

    device: str
    mode: str
    counters: bool = False

    @property
    def key(self) -> str:
        return f"{self.device}:{self.mode}{'+counters' if self.counters else ''}"


CASES: tuple[ModeCase, ...] = (
    ModeCase("a100", "cuda-fp32"),
    ModeCase("ipu", "fp32"),
    ModeCase("a100", "tensorrt"),
    ModeCase("tpu-v3", "default"),
    ModeCase("tpu-v3", "high"),
    ModeCase("tpu-v3", "highest"),
    ModeCase("ipu", "fp16-sr"),
    ModeCase("groq", "default"),
    ModeCase("groq", "fp32-exact-vector"),
    ModeCase("groq", "default", counters=True),
    ModeCase("tpu-v3", "default", counters=True),
    ModeCase("ipu", "fp16-sr", counters=True),
    # issue 29: tensor-core modes (io-ehh has no matrix product: they run its elementwise fp32)
    ModeCase("a100", "tf32"),
    ModeCase("a100", "fp16"),
    ModeCase("a100", "bf16"),
    ModeCase("h100", "tf32"),
    ModeCase("h100", "fp16"),
    ModeCase("h100", "bf16"),
    ModeCase("h100", "fp8-e4m3"),
    ModeCase("h100", "fp8-e5m2"),
)


def pulse(ncells: int) -> np.ndarray:
    """I_app into every third cell (seeded positions independent of the device)."""
    current = np.zeros(ncells)
    current[np.random.default_rng(SEED).choice(ncells, ncells // 3, replace=False)] = PULSE_UA
    return current


def run_case(case: ModeCase) -> dict[str, np.ndarray]:
    """The case's probes, spike steps, final state (and counters), as arrays to compare bit for bit."""
    from hwbench.core.plugins import get_registry
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    kernel = IoEhhKernel()
    workload = kernel.make_workload(CELLS, connected=True, seed=SEED)
    device = get_registry().devices[case.device]
    # sample_every given: always the emulation, even on a host with the real chip
    executor = device.executor_for(
        kernel, workload, mode=case.mode, engine="jax", sample_every=kernel.info.sample_every, counters=case.counters
    )
    current = {"I_app": pulse(workload.size)}
    early = executor.run(workload.state0, current, EARLY_SAMPLES)
    first = executor.run(early.state, current, PULSE_SAMPLES)
    second = executor.run(first.state, {"I_app": np.zeros(workload.size)}, QUIET_SAMPLES)
    runs = (early, first, second)
    out = {
        "probes": np.concatenate([r.probes for r in runs]).astype(np.float32),
        "spikes": np.concatenate([r.spikes for r in runs]),
        "early_state": np.asarray(early.state, dtype=np.float32),
        "state": np.asarray(second.state, dtype=np.float32),
    }
    if case.counters:
        names = sorted(set().union(*(r.counters for r in runs)))
        out["counters"] = np.asarray([sum(r.counters.get(n, 0) for r in runs) for n in names], np.int64)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = FIXTURES.relative_to(ROOT)
    parser.add_argument("--out", type=Path, default=FIXTURES, help=f"the .npz to write (default: {default})")
    args = parser.parse_args(argv)
    out: Path = args.out
    if out.suffix != ".npz" or out.is_dir() or not out.parent.is_dir():
        parser.error(f"--out: a .npz file in an existing folder, got {out}")
    arrays: dict[str, np.ndarray] = {}
    for case in CASES:
        result = run_case(case)
        spikes = int((result["spikes"] >= 0).sum())
        finite = bool(np.isfinite(result["state"]).all())
        print(f"{case.key:<32} spikes {spikes:4d}  final state finite: {finite}", file=sys.stderr)
        for name, value in result.items():
            arrays[f"{case.key}/{name}"] = value
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp.npz")  # the old file stays whole until the new one is
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, out)
    print(f"wrote {out} ({len(CASES)} cases)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
