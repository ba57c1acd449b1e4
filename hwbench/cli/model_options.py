"""The options that feed a user's model to ``run``, ``audit`` and ``sweep`` (``--model m.onnx``), and
the per-node view of a model audit.

Every value is checked while the command line is parsed (one ``error:`` line, exit 2, nothing
written): the files exist, ``--shape`` is ``NAME:D0,D1,...`` with positive dimensions,
``--input-range`` is ``LO,HI`` with LO < HI, ``--max-memory`` a positive size.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from hwbench.cli import validate
from hwbench.cli.command import given
from hwbench.cli.output import print_table, stdout
from hwbench.core.errors import UsageError

if TYPE_CHECKING:
    from hwbench.core.audit_report import CandidateNodes, ProtocolReport

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
SHOWN_NODES = 12
"""Rows of the per-node table in the terminal (the first divergent node and the worst; JSON has all)."""
MOVES = frozenset({"Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "Gather",
                   "Concat", "Split", "Expand", "Tile", "Dropout"})  # fmt: skip


class _Parsed(click.ParamType[Any]):
    """A value parsed by a function that raises UsageError (its message is the error line)."""

    def __init__(self, name: str, parse: Callable[[str], Any], text: str) -> None:
        self.name, self._parse, self._text = name, parse, text

    def describe(self) -> str:
        return self._text

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self._parse(value)
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


def _shape(text: str) -> str:
    from hwbench.plugins.kernels.model.inputs import parse_shape

    parse_shape(text)
    return text


def _range(text: str) -> tuple[float, float]:
    from hwbench.plugins.kernels.model.inputs import parse_range

    return parse_range(text)


def _memory(text: str) -> int:
    from hwbench.plugins.kernels.model.memory import parse_memory

    return parse_memory(text)


SHAPE = _Parsed("shape", _shape, "NAME:D0,D1,... a graph input and its dimensions, each a positive integer")
RANGE = _Parsed("range", _range, "LO,HI: two finite numbers, LO < HI")
MEMORY = _Parsed("size", _memory, "a positive size in bytes, or with a unit: 512M, 8G, 2GiB")
TOLERANCE = validate.FiniteFloat(0.0)


def _apply(command: Callable[..., Any], options: list[Decorator]) -> Callable[..., Any]:
    for option in reversed(options):
        command = option(command)
    return command


def model_inputs(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--model``, ``--inputs``, ``--shape``, ``--input-range``, ``--max-memory``; the command
    refuses every model option given without ``--model`` before it starts."""

    @functools.wraps(command)
    def checked(*args: Any, **kwargs: Any) -> Any:
        refuse_without_model(click.get_current_context())
        return command(*args, **kwargs)

    return _apply(checked, [
        click.option("--model", "model", type=validate.InFile(), default=None,
                     help="A user's ONNX model file: run or audit it (the onnx kernel; docs/models.md)."),
        click.option("--inputs", "model_inputs", type=validate.InFile(), default=None,
                     help="The model's inputs (.npz keyed by the graph's input names; default: generated)."),
        click.option("--shape", "shapes", type=SHAPE, multiple=True, metavar="NAME:D0,D1,...",
                     help="Size of a generated input with symbolic dimensions (repeatable)."),
        click.option("--input-range", type=RANGE, default=None, metavar="LO,HI",
                     help="Generated inputs are uniform on [LO, HI] (default -1,1)."),
        click.option("--max-memory", type=MEMORY, default=None, metavar="SIZE",
                     help="Refuse (exit 4) a model estimated to need more (default: half the available memory)."),
    ])  # fmt: skip


def model_tolerances(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--rtol``, ``--atol``: what a model's outputs must meet."""
    return _apply(command, [
        click.option("--rtol", type=TOLERANCE, default=None, help="Model outputs: relative tolerance of the verdict."),
        click.option("--atol", type=TOLERANCE, default=None, help="Model outputs: absolute tolerance of the verdict."),
    ])  # fmt: skip


def model_criteria(command: Callable[..., Any]) -> Callable[..., Any]:
    """The tolerances, ``--labels``, ``--precision-map``, ``--keep-wider``, ``--wider``."""
    return _apply(model_tolerances(command), [
        click.option("--labels", type=validate.InFile(), default=None,
                     help="A classifier's labels (.npy of class indices, one per row): adds accuracy."),
        click.option("--precision-map", is_flag=True,
                     help="Find the nodes to keep at a wider mode so the outputs pass (needs --rtol/--atol)."),
        click.option("--keep-wider", type=validate.InFile(), default=None,
                     help="Keep the nodes of this precision map (JSON, as --precision-map writes) wider."),
        click.option("--wider", default=None, metavar="MODE",
                     help="The device mode kept nodes use (default: its other mode with the widest matrix input)."),
    ])  # fmt: skip


MODEL_OPTIONS = ("model_inputs", "shapes", "input_range", "max_memory")
FUNCTION_TAKES = ("model_inputs", "rtol", "atol")
"""The options a function audit (``hwbench audit --function``) takes too."""
CRITERIA = ("rtol", "atol", "labels", "precision_map", "keep_wider", "wider")


def model_settings(params: dict[str, Any]) -> dict[str, Any]:
    """The library's model keywords from a command's parameters (those it has and were given)."""
    names = {"model_inputs": "inputs", "shapes": "shapes"}
    out = {}
    for key in (*MODEL_OPTIONS, *CRITERIA):
        value = params.get(key)
        if value not in (None, False, ()):
            out[names.get(key, key)] = value
    return out


def refuse_without_model(ctx: click.Context) -> None:
    """The model options need ``--model`` (a function audit checks its own: ``--inputs``, the tolerances)."""
    if ctx.params.get("model") is not None or ctx.params.get("function") is not None:
        return
    for key in (*MODEL_OPTIONS, *CRITERIA, "outputs"):
        if given(ctx, key):
            flag = next(max(p.opts, key=len) for p in ctx.command.params if p.name == key)
            both = "function" in ctx.params and key in FUNCTION_TAKES  # the audit command's --function
            what, give = (
                ("a model or a function", "--model FILE or --function MODULE:NAME")
                if both
                else ("a model", "the model with --model FILE")
            )
            raise UsageError(f"{flag} is an option of {what}: give {give}")


# --------------------------------------------------------------------------- rendering
def render_nodes(p: ProtocolReport) -> None:
    """Per candidate: the first node above its floor, the per-node table (its worst rows), the real
    run beside the emulated one, and the precision map."""
    for c in p.candidates:
        first = f"first node above its floor: {c.first_divergent_node}" if c.first_divergent_node else ""
        first = first or "no node above its floor"
        mech = f" ({c.mechanism})" if c.mechanism else ""
        stdout.print(escape(f"  {c.device}:{c.mode} [{c.engine}]: {first}{mech}"), highlight=False)
        _node_table(c)
        for note in c.notes:
            stdout.print(escape(f"    note: {note}"), highlight=False)
        if c.real_run is not None:
            stdout.print(escape(f"    real run: {_real(c.real_run)}"), highlight=False)
        if c.precision_map is not None:
            m = c.precision_map
            names = ", ".join(m.keep_wider[:8]) + (" ..." if len(m.keep_wider) > 8 else "")
            stdout.print(escape(
                f"    precision map: keep {len(m.keep_wider)} node(s) at {m.wider_mode} ({m.flops_share:.1%} of the "
                f"matrix FLOPs, {m.nodes_share:.0%} of the nodes); rerun with them kept: {m.verdict.value}; {names}"
            ), highlight=False)  # fmt: skip


def _node_table(c: CandidateNodes) -> None:
    """The first node above its floor and the worst of the nodes that compute (a move of data
    repeats its input's error: the JSON report and the HTML page list those too)."""
    computing = [i for i, n in enumerate(c.nodes) if n.op_type not in MOVES]
    if not computing:
        return
    order = sorted(computing, key=lambda i: -c.nodes[i].max_ulps)[:SHOWN_NODES]
    if c.first_divergent_node is not None:
        first = next(i for i, n in enumerate(c.nodes) if n.name == c.first_divergent_node)
        order = sorted({first, *order[: SHOWN_NODES - 1]})
    else:
        order = sorted(order)
    rows = [(i, n.name[:40], n.op_type, _g(n.max_rel_error), _g(n.max_ulps), _g(n.floor_ulps),
             "yes" if n.above_floor else "") for i in order for n in [c.nodes[i]]]  # fmt: skip
    title = f"{c.device}:{c.mode}: nodes ({len(c.nodes)}; ulps of {c.ulp_format}; worst {len(rows)} shown)"
    print_table(title, ["#", "node", "op", "max rel", "ulps", "floor ulps", "above"], rows, narrow=True)


def _g(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if not math.isfinite(x) else f"{x:.3g}"


def _real(real: dict[str, Any]) -> str:
    if not real.get("possible"):
        return f"not possible here: {real.get('reason')}"
    worst = max((o["max_rel_error"] for o in real.get("vs_emulated", {}).values()), default=0.0)
    return f"{real.get('engine')} on {real.get('chip')}; max rel difference from the emulation {worst:.3g}"
