"""The CPU device's profiles (``hwbench.accuracy.numerics.presets.cpu_profile``) and the shared knob helpers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hwbench.accuracy.numerics.presets import Knob, cpu_profile, knob_notes, resolve_knobs
from hwbench.accuracy.numerics.profile import Confidence, NumericsProfile
from hwbench.api import RunRequest
from hwbench.cli.main import main
from hwbench.core import plugins as host
from hwbench.core.errors import UsageError
from hwbench.plugins.devices._support import footprint
from hwbench.plugins.devices.cpu import CpuDevice
from hwbench.plugins.kernels.leaky_ring import LeakyRingKernel


@pytest.mark.parametrize(("mode", "carrier"), [("fp32", "float32"), ("fp64", "float64")])
def test_cpu_profile_is_native_ieee(mode: str, carrier: str) -> None:
    profile = cpu_profile(mode)
    assert profile.is_native()
    assert profile.carrier == carrier
    assert profile.ops == {}
    assert (profile.device, profile.mode, profile.name) == ("cpu", mode, f"cpu-{mode}")
    text = " ".join(profile.notes)
    assert "IEEE" in text and "Table I" in text  # the claim and the study's CPU, both cited
    assert NumericsProfile.from_json(profile.to_json()) == profile
    assert NumericsProfile.from_toml(profile.to_toml()) == profile


def test_cpu_device_uses_the_preset() -> None:
    device = CpuDevice()
    assert device.modes == ("fp32", "fp64")
    assert device.numerics() == cpu_profile("fp32")
    assert device.numerics("fp64") == cpu_profile("fp64")


def test_unknown_cpu_mode_names_the_choices() -> None:
    with pytest.raises(UsageError, match=r"fp32, fp64.*Did you mean 'fp32'"):
        cpu_profile("fp23")


def test_cpu_fp32_emulation_is_bit_identical_to_the_engine() -> None:
    """A native profile must add no rounding: the emulated executor returns the engine's bits."""
    from hwbench.accuracy.numerics.emulated_device import emulated_executor

    kernel = LeakyRingKernel()
    wl = kernel.make_workload(32, seed=3)
    inputs = kernel.default_inputs(wl)
    emulated = emulated_executor(RunRequest(kernel, wl, engine="numpy"), cpu_profile("fp32")).run(wl.state0, inputs, 5)
    native = CpuDevice().executor_for(kernel, wl, engine="numpy").run(wl.state0, inputs, 5)
    assert np.array_equal(emulated.probes.view(np.uint32), native.probes.view(np.uint32))


# --------------------------------------------------------------------------- knob helpers
KNOBS = {
    "k": Knob(2.0, "ulps.", "src-k", Confidence.ASSUMED, minimum=0.0),
    "flag": Knob(True, "a flag.", "src-flag", Confidence.DOCUMENTED, kind="bool"),
    "how": Knob("a", "a choice.", "src-how", Confidence.ASSUMED, kind="choice", choices=("a", "b")),
    "n": Knob(3, "a count.", "src-n", Confidence.ASSUMED, kind="int", minimum=1, maximum=6),
}


def test_knobs_read_command_line_values() -> None:
    values = resolve_knobs("dev", KNOBS, {"k": 3, "flag": "off", "how": "B", "n": 4.0})
    assert values == {"k": 3.0, "flag": False, "how": "b", "n": 4}
    assert resolve_knobs("dev", KNOBS, {}) == {"k": 2.0, "flag": True, "how": "a", "n": 3}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"kk": 1}, r"no parameter kk; settable: flag, how, k, n"),
        ({"k": -1}, r"'k' of device 'dev' must be >= 0"),
        ({"k": "lots"}, r"'k' of device 'dev' is a number"),
        ({"k": float("nan")}, r"must be finite"),
        ({"flag": "maybe"}, r"'flag' of device 'dev' is true or false"),
        ({"how": "c"}, r"must be one of a, b"),
        ({"n": 2.5}, r"whole number"),
        ({"n": 7}, r"must be <= 6"),
    ],
)
def test_knobs_refuse_bad_values(values: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_knobs("dev", KNOBS, values)


def test_knob_notes_cite_source_and_confidence() -> None:
    notes = knob_notes(KNOBS, {"k": 5.0})
    assert notes[0].startswith("Parameter k = 5.0 (default 2.0), assumed: ulps. Source: src-k")
    assert notes[1] == "Parameter flag = True, documented: a flag. Source: src-flag"


def test_footprint_from_workload_and_from_size() -> None:
    kernel = LeakyRingKernel()
    wl = kernel.make_workload(500, seed=0)
    exact = footprint(kernel, wl)
    assert exact is not None
    assert (exact.cells, exact.state, exact.indices, exact.connections) == (500, 1000, 2000, 1000)
    scaled = footprint(kernel, size=500)
    assert scaled == exact  # per-cell counts do not depend on the size
    assert footprint(kernel) is None


# ------------------------------------------------------------------------------------ CLI
def test_devices_json_lists_cpu_and_the_accelerators(capsys: pytest.CaptureFixture[str]) -> None:
    host.reset_registry()
    try:
        assert main(["devices", "--json"]) == 0
    finally:
        host.reset_registry()
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert records["cpu"]["profiles"]["fp64"]["carrier"] == "float64"
    for name, modes in {
        "a100": ["cuda-fp32", "tensorrt", "tf32", "fp16", "bf16"],
        "h100": ["tf32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2"],
        "tpu-v3": ["default", "high", "highest"],
        "ipu": ["fp32", "fp16-sr"],
    }.items():
        record = records[name]
        assert record["modes"] == modes
        assert record["status"] in ("real", "emulated") and record["reason"]
        assert record["spec"]["sources"]
        for mode in modes:
            profile = record["profiles"][mode]
            assert "error" not in profile, profile
            assert profile["notes"], (name, mode)
            assert all(op["source"] and op["confidence"] for op in profile["ops"].values())
