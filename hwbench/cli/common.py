"""Options and helpers shared by the commands that run kernels."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import click

from hwbench.core.errors import UsageError
from hwbench.plugins import DEFAULT_KERNEL

MAX_SIZES = 10_000  # a size list longer than this is a typo (1..99999999), not a benchmark plan


def parse_sizes(text: str, *, cube: bool) -> list[int]:
    """Parse ``4..20,30,40`` (grid edges n, cells n^3 when ``cube``) or plain cell counts.

    An empty list, a non-positive size, a reversed range or more than :data:`MAX_SIZES` sizes is
    a UsageError: ``bench --sizes ''`` must not silently run the defaults.
    """
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d{1,12})\.\.(\d{1,12})", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi or hi - lo >= MAX_SIZES:
                raise UsageError(f"bad size range '{part}': use lo..hi with lo <= hi and at most {MAX_SIZES:,} sizes")
            values.extend(range(lo, hi + 1))
        elif re.fullmatch(r"\d{1,12}", part):
            values.append(int(part))
        else:
            raise UsageError(
                f"bad size list '{text[:40]}': use comma-separated positive integers (at most 12 digits) "
                "and ranges like 4..20"
            )
        if len(values) > MAX_SIZES:
            raise UsageError(f"bad size list: more than {MAX_SIZES:,} sizes")
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"bad size list '{text[:40]}': give at least one size; sizes must be positive integers")
    return [v**3 for v in values] if cube else values


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def kernel_option(default: str = DEFAULT_KERNEL) -> Decorator:
    return click.option("--kernel", "-k", default=default, show_default=True, help="Kernel name (hwbench kernels).")


def device_option(default: str = "cpu") -> Decorator:
    return click.option("--device", "-d", default=default, show_default=True, help="Device name (hwbench devices).")


mode_option = click.option("--mode", default=None, help="Numerics mode of the device (default: its first mode).")
engine_option = click.option("--engine", default=None, help="Engine: jax, numpy, tensorflow, onnx (default: fastest).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON only on stdout.")


def energy_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--no-energy`` and ``--energy-model``, the energy switches of every timed command."""
    command = click.option(
        "--energy-model",
        is_flag=True,
        help="Where no counter is readable, show a 'modelled' estimate TDP x wall time (labelled as such).",
    )(command)
    return click.option("--no-energy", is_flag=True, help="Do not read energy counters (RAPL / NVML).")(command)


def parse_set(values: tuple[str, ...]) -> dict[str, object]:
    """``--set key=value``: an int, a float, a JSON array of numbers ``[1,2.5]`` (one per cell,
    where the kernel takes per-cell values) or else a string (``reset=zero``).

    Non-finite numbers (``nan``, ``inf``, ``1e400``) and a key given twice are UsageErrors; whether
    a finite value lies in the parameter's range is for the kernel or device to say.
    """
    out: dict[str, object] = {}
    for item in values:
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or not key:
            raise UsageError(f"--set expects KEY=VALUE, got '{item[:40]}'")
        if key in out:
            raise UsageError(f"--set {key} is given twice; give each parameter once")
        out[key] = _set_value(key, raw)
    return out


def _set_value(key: str, raw: str) -> object:
    if raw.startswith("["):
        try:
            items = json.loads(raw)
        except (ValueError, RecursionError):
            items = None
        ok = isinstance(items, list) and items and all(isinstance(x, (int, float)) for x in items)
        if not ok or any(isinstance(x, bool) or not math.isfinite(x) for x in items):
            raise UsageError(f"--set {key}={raw[:40]}: an array must be a non-empty JSON list of finite numbers")
        return [float(x) for x in items]
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        return raw
    if not math.isfinite(value):
        raise UsageError(f"--set {key}={raw[:40]}: numbers must be finite (no nan, inf or overflow)")
    return value
