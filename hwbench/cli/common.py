"""Options and helpers shared by the commands that run kernels."""

from __future__ import annotations

import re

import click

from hwbench.core.errors import UsageError


def parse_sizes(text: str, *, cube: bool) -> list[int]:
    """Parse ``4..20,30,40`` (grid edges n, cells n^3 when ``cube``) or plain cell counts."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\.\.(\d+)", part)
        try:
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if lo > hi:
                    raise ValueError
                values.extend(range(lo, hi + 1))
            else:
                values.append(int(part))
        except ValueError:
            raise UsageError(f"bad size list '{text}': use comma-separated integers and ranges like 4..20") from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"bad size list '{text}': sizes must be positive integers")
    return [v**3 for v in values] if cube else values


def kernel_option(default: str = "io-ehh"):
    return click.option("--kernel", "-k", default=default, show_default=True, help="Kernel name (hwbench kernels).")


def device_option(default: str = "cpu"):
    return click.option("--device", "-d", default=default, show_default=True, help="Device name (hwbench devices).")


mode_option = click.option("--mode", default=None, help="Numerics mode of the device (default: its first mode).")
engine_option = click.option("--engine", default=None, help="Engine: jax, numpy, tensorflow, onnx (default: fastest).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON only on stdout.")


def parse_set(values: tuple[str, ...]) -> dict[str, object]:
    """``--set key=value``: numbers become int/float, everything else stays a string."""
    out: dict[str, object] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--set expects key=value, got '{item}'")
        try:
            value: object = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
        out[key.strip()] = value
    return out
