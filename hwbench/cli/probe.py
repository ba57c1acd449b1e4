"""``hwbench probe``: the published feature-detection probes against a device's matrix unit.

On an emulated device the probes measure its block-FMA model (and must read back exactly the
model's parameters); on real silicon (an NVIDIA GPU with JAX, device ``h100``) they measure the
chip. ``--compare MODEL`` runs the same probes on a named model and lists the disagreements.
"""

from __future__ import annotations

from typing import Any, Literal

import click
from pydantic import BaseModel, ConfigDict, Field

from hwbench.cli.common import json_option
from hwbench.cli.output import print_json, print_table, stdout
from hwbench.core.errors import EXIT_OK, UsageError

FEATURE_LABELS = {
    "result_fraction_bits": "result fraction bits",
    "block_size": "block size (terms)",
    "extra_alignment_bits": "extra alignment bits",
    "alignment_rounding": "alignment rounding",
    "final_rounding": "block rounding (c = 0)",
    "c_rounding": "rounding with c",
    "c_in_alignment": "c joins alignment",
    "subnormal_inputs": "subnormal inputs",
    "subnormal_outputs": "subnormal outputs",
    "carry_bits": "carry bits",
    "normalisation": "normalisation",
    "monotonic": "monotonicity",
}


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


def _device_unit(spec: str, emulated: bool) -> tuple[str, str, Execution, str, Any, str, str]:
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


@click.command("probe")
@click.option("--device", "-d", "spec", required=True, help="Device and mode, D[:MODE] (e.g. h100:fp16).")
@click.option("--compare", "compare_with", default=None, help="A named matrix unit to compare with (e.g. a100).")
@click.option("--emulated", is_flag=True, help="Probe the device's model even where its silicon is present.")
@json_option
def probe_command(spec: str, compare_with: str | None, emulated: bool, as_json: bool) -> int:
    """Measure a matrix unit's arithmetic with the published feature-detection probes.

    Block size, extra alignment bits, roundings, where c joins, subnormals, carry bits,
    normalisation and monotonicity (Fasi et al. 2021; Khattak & Mikaitis, HPEC 2025; FTTN).
    """
    from hwbench.accuracy.matrix_probe import probe

    name, mode, execution, what, unit, fin, fout = _device_unit(spec, emulated)
    in_fmt = unit.model.input_float if hasattr(unit, "model") else fin
    features = probe(unit, in_fmt, fout, name=fin)
    comparison = _compare(features, compare_with, fin, fout) if compare_with else None
    report = ProbeReport(device=name, mode=mode, execution=execution, unit=what, features=features, compare=comparison)
    if as_json:
        print_json(report.model_dump(mode="json", by_alias=True))
        return EXIT_OK
    _render(report, features, comparison)
    return EXIT_OK


def _render(report: ProbeReport, features: Any, comparison: Comparison | None) -> None:
    fmts = f"{features.input_format}->{features.output_format}"
    title = f"{report.device}:{report.mode} {fmts}, {report.execution}: {report.unit}"
    heads = ["feature", "measured"] + ([comparison.model] if comparison else [])
    rows = []
    for field, label in FEATURE_LABELS.items():
        mine = _show(field, getattr(features, field))
        row = [label, mine]
        if comparison:
            theirs = _show(field, getattr(comparison.features, field))
            row.append(theirs if theirs == mine else f"{theirs}  <- differs")
        rows.append(row)
    print_table(title, heads, rows)
    for note in features.notes:
        stdout.print(f"  note: {note}", highlight=False, markup=False)
    if comparison:
        n = len(comparison.disagreements)
        stdout.print(f"  {n} feature(s) differ from {comparison.model}", highlight=False, markup=False)


NONE_MEANS = {"extra_alignment_bits": "exact (every bit kept)", "block_size": "no boundary up to 128"}


def _show(field: str, value: Any) -> str:
    if value is None:
        return NONE_MEANS.get(field, "not observable")
    if isinstance(value, bool):
        return "yes" if value else "no (added after)"
    return str(value)


COMMANDS = [probe_command]
