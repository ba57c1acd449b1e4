"""``hwbench probe``: the published feature-detection probes against a device's matrix unit
(a thin layer over :func:`hwbench.library.probe.probe`, i.e. ``hwbench.probe``).

On an emulated device the probes measure its block-FMA model (and must read back exactly the
model's parameters); on real silicon (an NVIDIA GPU with JAX, device ``h100``) they measure the
chip. ``--compare MODEL`` runs the same probes on a named model and lists the disagreements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from hwbench.cli.common import json_option
from hwbench.cli.output import print_json, print_table, stdout
from hwbench.core.errors import EXIT_OK

if TYPE_CHECKING:
    from hwbench.library.probe import Comparison, ProbeReport

FEATURE_LABELS = {
    "result_fraction_bits": "result fraction bits",
    "block_size": "block size (terms)",
    "instruction_size": "terms per c addition",
    "interleave": "interleaved lanes (run)",
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


@click.command("probe")
@click.option("--device", "-d", "spec", required=True, help="Device and mode, D[:MODE] (e.g. h100:fp16).")
@click.option("--compare", "compare_with", default=None, help="A named matrix unit to compare with (e.g. a100).")
@click.option("--emulated", is_flag=True, help="Probe the device's model even where its silicon is present.")
@json_option
def probe_command(spec: str, compare_with: str | None, emulated: bool, as_json: bool) -> int:
    """Measure a matrix unit's arithmetic with the published feature-detection probes.

    Block size, interleaved lanes, extra alignment bits, roundings, where c joins, subnormals,
    carry bits, normalisation and monotonicity (Fasi et al. 2021; Khattak & Mikaitis, HPEC 2025; FTTN).
    """
    from hwbench.library.probe import probe

    report = probe(spec, compare=compare_with, emulated=emulated)
    if as_json:
        print_json(report.model_dump(mode="json", by_alias=True))
        return EXIT_OK
    _render(report, report.features, report.compare)
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


NONE_MEANS = {
    "extra_alignment_bits": "exact (every bit kept)",
    "block_size": "no boundary up to 128",
    "instruction_size": "no boundary up to 128",
    "interleave": "no (consecutive terms)",
}


def _show(field: str, value: Any) -> str:
    if value is None:
        return NONE_MEANS.get(field, "not observable")
    if isinstance(value, bool):
        return "yes" if value else "no (added after)"
    return str(value)


COMMANDS = [probe_command]
