"""``hwbench.probe``: the published feature-detection probes against a device's matrix unit.

The ``hwbench probe`` command is a thin layer over :func:`probe` (rendering stays in
``hwbench/cli/probe.py``). On an emulated device the probes measure its block-FMA model (and read
back exactly the model's parameters); on real silicon (an NVIDIA GPU with JAX, device ``h100``)
they measure the chip. ``compare`` runs the same probes on a named model and lists where they differ.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hwbench.core.errors import UsageError


class Comparison(BaseModel):
    model: str
    features: Any
    disagreements: list[dict[str, Any]]


class ProbeReport(BaseModel):
    """What ``hwbench probe --json`` prints (strict JSON: no NaN / Infinity)."""

    model_config = ConfigDict(populate_by_name=True)

    schema_: str = Field("hwbench.probe/1", alias="schema")
    device: str
    mode: str
    execution: Execution
    unit: str
    features: Any
    compare: Comparison | None = None


Execution = Literal["real", "emulated"]


def device_unit(spec: str, emulated: bool) -> tuple[str, str, Execution, str, Any, str, str]:
    """(device, mode, execution, what, unit, input format, output format) for ``D[:MODE]``."""
    from hwbench.core.plugins import get_registry

    name, _, mode = spec.partition(":")
    device = get_registry().device(name.strip())
    mode = mode.strip() or device.modes[0]
    if mode not in device.modes:
        raise UsageError(f"unknown mode '{mode}' of device '{device.name}'; choose from: {', '.join(device.modes)}")
    unit, what = _emulated_unit(device, mode)
    fin, fout = unit.model.input_format, unit.model.output_format
    real = None if emulated else getattr(device, "real_matrix_unit", lambda m: None)(mode)
    if real is not None:
        return device.name, mode, "real", f"real tensor cores ({real.describe()})", real, fin, fout
    return device.name, mode, "emulated", what, unit, fin, fout


def _emulated_unit(device: Any, mode: str) -> tuple[Any, str]:
    """The unit a device mode's profile names, else the device's own block-FMA description."""
    from hwbench.accuracy.numerics.matrix_unit import MatrixUnit
    from hwbench.plugins.devices._matrix_unit_ops import matmul_method, profile_unit

    profile = device.numerics(mode)
    unit = None if profile is None else profile_unit(profile)
    if unit is not None:
        return unit, matmul_method(profile)
    described = getattr(device, "matrix_unit_model", lambda m: None)(mode)
    if described is None:
        raise UsageError(f"device '{device.name}' mode '{mode}' has no matrix-unit model; {_with_units()}")
    return MatrixUnit(described), f"block-FMA description {described.name} ({described.confidence.value})"


def _with_units() -> str:
    from hwbench.core.plugins import get_registry
    from hwbench.plugins.devices._matrix_unit_ops import profile_unit

    def has_unit(dev: Any, mode: str) -> bool:
        profile = dev.numerics(mode)
        if profile is not None and profile_unit(profile) is not None:
            return True
        return getattr(dev, "matrix_unit_model", lambda m: None)(mode) is not None

    found = []
    for dev in get_registry().devices.values():
        modes = [m for m in dev.modes if has_unit(dev, m)]
        if modes:
            found.append(f"{dev.name} ({', '.join(modes)})")
    return "devices with one: " + "; ".join(found)


def _compare(features: Any, model_name: str, fin: str, fout: str) -> Comparison:
    from hwbench.accuracy.matrix_probe import disagreements, probe
    from hwbench.accuracy.numerics.matrix_unit import matrix_unit

    other = matrix_unit(model_name, fin, fout)
    theirs = probe(other, other.model.input_float, fout, name=fin)
    rows = [{"feature": f, "measured": a, "model": b} for f, a, b in disagreements(features, theirs)]
    return Comparison(model=other.model.label, features=theirs, disagreements=rows)


def probe(device: str, *, compare: str | None = None, emulated: bool = False) -> ProbeReport:
    """Probe ``device`` (``"h100:fp16"``, ``NAME[:MODE]``): its matrix unit's feature table, and with
    ``compare`` (a named unit such as ``"a100"``) where that model disagrees. ``emulated`` probes the
    device's model even where its silicon is present. Bad names raise a UsageError."""
    from hwbench.accuracy.matrix_probe import probe as run_probes

    name, mode, execution, what, unit, fin, fout = device_unit(device, emulated)
    in_fmt = unit.model.input_float if hasattr(unit, "model") else fin
    features = run_probes(unit, in_fmt, fout, name=fin)
    comparison = _compare(features, compare, fin, fout) if compare else None
    return ProbeReport(device=name, mode=mode, execution=execution, unit=what, features=features, compare=comparison)
