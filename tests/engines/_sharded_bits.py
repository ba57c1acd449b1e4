"""Run by tests/engines/test_sharded.py in a fresh process with forced host CPU devices: every
configuration unsharded and over 1, 2 and 4 devices; prints, per configuration, whether the state,
probes and spikes are bit-identical to the unsharded run (JSON on stdout).

Not imported by the suite: XLA_FLAGS (the device count) must be set before JAX starts.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from hwbench.core.engines.jax_engine import JaxEngine
from hwbench.core.engines.jax_sharded import build_sharded
from hwbench.core.plugins import load_registry

CELLS = 12**3  # a 12^3 torus: 4 slabs of 3 planes, the gap junctions' reach


def compare(name: str, make, wl, inputs, samples: int, shards: list[int]) -> dict[str, object]:
    """The unsharded run's spike and non-finite counts, and per shard count whether state, probes
    and spikes equal it bit for bit."""
    ref = make(None).run(wl.state0, inputs, samples)
    found: dict[str, object] = {
        "spikes": int((ref.spikes >= 0).sum()),
        "nonfinite": int((~np.isfinite(ref.state)).sum()),
    }
    for n in shards:
        out = make(n).run(wl.state0, inputs, samples)
        pairs = [(out.state, ref.state), (out.probes, ref.probes), (out.spikes, ref.spikes)]
        found[str(n)] = all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in pairs)
    return {name: found}


def main() -> None:
    registry = load_registry()
    kernel = registry.kernel("io-ehh")
    rng = np.random.default_rng(7)
    wl = kernel.make_workload(CELLS, seed=42, g_CaL=0.5 + 0.9 * rng.random(CELLS))
    drive = {"I_app": np.where(rng.random(CELLS) < 0.3, rng.normal(10.0, 3.0, CELLS), 0.0)}
    engine = JaxEngine()
    which = sys.argv[1:]
    report: dict[str, object] = {}

    def native(dtype: str):
        return lambda n: (
            engine.build(kernel, wl, dtype=dtype)
            if n is None
            else build_sharded(engine, kernel, wl, shards=n, dtype=dtype)
        )

    def emulated(device: str, mode: str | None):
        from hwbench.accuracy.numerics.emulate import emulating_ops

        profile = registry.device(device).numerics(mode)
        wrap = emulating_ops(profile, counters=False)
        return lambda n: (
            engine.build(kernel, wl, dtype=profile.carrier, ops_wrapper=wrap)
            if n is None
            else build_sharded(engine, kernel, wl, shards=n, dtype=profile.carrier, ops_wrapper=wrap)
        )

    if "native" in which:
        report |= compare("cpu fp32", native("float32"), wl, drive, 20, [1, 2, 4])
        report |= compare("cpu fp64", native("float64"), wl, drive, 10, [2, 4])
    if "emulated" in which:
        report |= compare("groq", emulated("groq", None), wl, drive, 10, [2, 4])
        report |= compare("tpu-v3", emulated("tpu-v3", None), wl, drive, 10, [2, 4])
        broken = kernel.make_workload(CELLS, seed=42)
        broken.state0[9, 5] = np.inf  # a non-finite dendrite: the one-hot contamination spreads NaN
        report |= compare("tensorrt, inf source", emulated("a100", "tensorrt"), broken, {}, 3, [2, 4])
    if "unconnected" in which:
        loose = kernel.make_workload(1000, connected=False, seed=3)
        make = lambda n: engine.build(kernel, loose) if n is None else build_sharded(engine, kernel, loose, shards=n)  # noqa: E731
        report |= compare("unconnected", make, loose, {}, 5, [2, 4])
    if "devices" in which:
        report |= every_device_mode(registry, kernel, wl, drive)
    print(json.dumps(report))


def every_device_mode(registry, kernel, wl, inputs) -> dict[str, object]:
    """Each device mode as a user gets it (the device's own executor, RunRequest.shards = 2): the
    bits of its unsharded run, or the reason it refuses to shard."""
    from hwbench.core.device import RunRequest
    from hwbench.core.errors import UnavailableError

    found: dict[str, object] = {}
    for name in ("cpu", "groq", "a100", "h100", "tpu-v3", "ipu"):
        device = registry.device(name)
        for mode in device.modes:
            ref = device.executor(RunRequest(kernel, wl, mode=mode)).run(wl.state0, inputs, 3)
            try:
                out = device.executor(RunRequest(kernel, wl, mode=mode, shards=2)).run(wl.state0, inputs, 3)
            except UnavailableError as exc:
                found[f"{name}:{mode}"] = {"refused": str(exc)}
                continue
            found[f"{name}:{mode}"] = {"2": out.state.tobytes() == ref.state.tobytes()}
    return found


if __name__ == "__main__":
    main()
