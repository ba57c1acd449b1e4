"""The click classes of hwbench's built-in commands: an empty option value is refused while parsing.

``--config ''``, ``--store ''`` or ``--id ''`` must not run as if the option were absent (the
user meant something, and the shell's unset variable or a typo lost it). Every built-in command
is a :class:`Command` (groups: :class:`Group`), whose parsing refuses any value that is empty or
blank, given on the command line or through an environment variable, with one usage error naming
what the option takes (exit 2). The few options where an empty value means something are listed
in :data:`EMPTY_ALLOWED` with the reason (none today). ``tests/cli/test_input_classes.py`` gives
every option of every command ``''`` and checks the answer.

This module imports only click: ``hwbench devices`` loads it (docs/cli.md, "Start-up time").
"""

from __future__ import annotations

import click
from click.core import ParameterSource

EMPTY_ALLOWED: dict[str, str] = {}
"""``"COMMAND PATH --option"`` -> why an empty value is meaningful there (it is then passed on)."""


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user set option ``name`` (on the command line or through the environment)."""
    source = ctx.get_parameter_source(name)
    return source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def _label(param: click.Parameter) -> str:
    return max(param.opts, key=len) if isinstance(param, click.Option) else (param.name or "").upper()


def _takes(param: click.Parameter) -> str:
    """What the parameter takes, in words: its type's range where it states one, else its help."""
    describe = getattr(param.type, "describe", None)
    if callable(describe):
        return str(describe())
    text = " ".join((getattr(param, "help", None) or "").split()).rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def refuse_empty(ctx: click.Context) -> None:
    """Refuse an empty or blank value of any parameter the user gave (one BadParameter, exit 2)."""
    for param in ctx.command.params:
        if param.name is None or not given(ctx, param.name):
            continue
        if f"{ctx.command_path} {_label(param)}" in EMPTY_ALLOWED:
            continue
        value = ctx.params.get(param.name)
        values = value if isinstance(value, (tuple, list)) else (value,)
        if any(isinstance(v, str) and not v.strip() for v in values):
            takes = _takes(param)
            message = "must not be empty" + (f" ({takes})" if takes else "")
            if not param.required:
                message += "; leave it out for the default"
            raise click.BadParameter(message, ctx=ctx, param=param)


class Command(click.Command):
    """A built-in command: options parsed, then an empty value refused (:func:`refuse_empty`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        if not ctx.resilient_parsing:  # shell completion parses partial command lines
            refuse_empty(ctx)
        return rest


class Group(click.Group):
    """A built-in command group (``results``): the same check on its options; sub-commands are :class:`Command`."""

    command_class = Command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        if not ctx.resilient_parsing:
            refuse_empty(ctx)
        return rest
