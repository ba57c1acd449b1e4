"""Entry point of the ``hwbench`` command: the command group and the error contract.

Exit codes (documented in README and docs/cli.md): 0 ok, 1 check failed, 2 usage error,
3 plugin / internal error, 4 requested device unavailable, 130 interrupted. Every failure prints
one line on stderr; a traceback only with ``--debug`` or ``HWBENCH_DEBUG=1``.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import click

from hwbench import __version__
from hwbench.core.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    HwbenchError,
    PluginError,
    unknown_name,
)


class StdoutClosed(Exception):
    """The reader of stdout went away (EPIPE). Not an OSError, so click does not turn it into exit 1."""


class HwbenchGroup(click.Group):
    """A click group that adds plugin commands lazily and suggests near matches for typos."""

    _plugins_added = False

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise StdoutClosed() from exc
        except SystemExit as exc:  # hwbench's commands return codes; only foreign code calls exit()
            raise PluginError(f"a plugin or library ended the command with exit({exc.code})") from exc

    def _add_plugin_commands(self) -> None:
        if self._plugins_added:
            return
        self._plugins_added = True
        from hwbench.core.plugins import get_registry

        get_registry().call_each("hwbench_add_commands", cli=self)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._add_plugin_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._add_plugin_commands()
            command = super().get_command(ctx, cmd_name)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if args and not name.startswith("-") and self.get_command(ctx, name) is None:
            raise click.UsageError(str(unknown_name("command", name, self.list_commands(ctx))), ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=HwbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="hwbench")
@click.option("--debug", is_flag=True, envvar="HWBENCH_DEBUG", help="Show tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Run kernels on AI accelerators and neuromorphic chips (real or emulated), measure speed,
    and audit numerical accuracy against a CPU reference.

    \b
    Exit codes: 0 ok, 1 check failed, 2 usage error, 3 plugin/internal error,
                4 requested device unavailable, 130 interrupted.
    """
    ctx.obj = {"debug": debug}


# The built-in commands and the module defining each. A module is imported when one of its commands
# is looked up (or when every command is listed, for --help), so `hwbench devices` does not import the
# audit, bench and training code (docs/cli.md, "Start-up time").
BUILTIN_COMMANDS = {
    **dict.fromkeys(
        ("devices", "kernels", "metrics", "engines", "plugins", "schema", "protocols"), "hwbench.cli.listing"
    ),
    "run": "hwbench.cli.run",
    "bench": "hwbench.cli.bench",
    "audit": "hwbench.cli.audit",
    "results": "hwbench.cli.results",
    "report": "hwbench.cli.report",
    "train": "hwbench.cli.train",
    "train-bench": "hwbench.cli.train",
    "sweep": "hwbench.cli.sweep",
    "probe": "hwbench.cli.probe",
}


class LazyCommands(dict[str, click.Command]):
    """A group's commands with the built-ins imported on first use: looking one up imports its
    module; iterating, counting or listing imports them all. A command added before its built-in
    namesake loads (a plugin's) keeps the name, as when plugins were added after the built-ins."""

    def __init__(self, modules: dict[str, str]) -> None:
        super().__init__()
        self.pending = dict(modules)

    def _load(self, name: object) -> None:
        module = self.pending.get(name) if isinstance(name, str) else None
        if module is None:
            return
        for other in [n for n, m in self.pending.items() if m == module]:
            del self.pending[other]
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a command module left out of this install
            if exc.name != module:
                raise
            return
        for command in mod.COMMANDS:
            self.setdefault(command.name or "", command)

    def _load_all(self) -> None:
        for name in list(self.pending):
            self._load(name)

    def __getitem__(self, name: str) -> click.Command:
        self._load(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        self._load(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        self._load(name)
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return super().__iter__()

    def __len__(self) -> int:
        self._load_all()
        return super().__len__()

    def keys(self) -> Any:
        self._load_all()
        return super().keys()

    def values(self) -> Any:
        self._load_all()
        return super().values()

    def items(self) -> Any:
        self._load_all()
        return super().items()


cli.commands = LazyCommands(BUILTIN_COMMANDS)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and turn every failure into one line and an exit code.

    ``argv=None`` means a real process (the console script): there an interrupt ends the process
    at once after cleanup, so worker threads still simulating cannot keep it alive.
    """
    debug = os.environ.get("HWBENCH_DEBUG", "") not in ("", "0") or "--debug" in (argv or sys.argv[1:])
    if argv is None:
        from hwbench.core import interrupts

        interrupts.install()
    try:
        return _run(argv, debug)
    except KeyboardInterrupt:  # raised again by a cleanup handler, or outside the command
        return _interrupted(argv)
    except BrokenPipeError:
        return _stdout_closed()
    finally:
        _show_plugin_warnings()
        if argv is None:  # the command has ended: a late Ctrl-C must not turn its exit code into a signal death
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run(argv: list[str] | None, debug: bool) -> int:
    try:
        result = cli.main(args=argv, prog_name="hwbench", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except StdoutClosed:
        return _stdout_closed()
    except SystemExit as exc:  # click answers EPIPE outside a command (e.g. --help) with exit(1)
        if type(sys.stdout).__name__.endswith("PacifyFlushWrapper"):
            return _stdout_closed()
        raise exc
    except click.exceptions.Abort:
        return _interrupted(argv)
    except click.ClickException as exc:  # usage errors: bad option, unknown command, bad value
        message = " ".join(exc.format_message().split())
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            message += f" (see '{exc.ctx.command_path} --help')"
        click.echo(f"error: {message}", err=True)
        return EXIT_USAGE if exc.exit_code in (1, 2) else exc.exit_code
    except HwbenchError as exc:
        if debug:
            return _traceback(exc.exit_code)
        click.echo(f"error: {' '.join(str(exc).split())}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted(argv)
    except MemoryError as exc:  # the estimates missed it: still the request's size, not a bug
        if debug:
            return _traceback(EXIT_UNAVAILABLE)
        click.echo(f"error: out of memory: {' '.join(str(exc).split())}; make the request smaller", err=True)
        return EXIT_UNAVAILABLE
    except Exception as exc:
        if debug:
            return _traceback(EXIT_INTERNAL)
        click.echo(
            f"error: internal error: {exc.__class__.__name__}: {exc} (run with --debug for a traceback)", err=True
        )
        return EXIT_INTERNAL
    return result if isinstance(result, int) else 0


def _traceback(code: int) -> int:
    """``--debug``: the traceback on stderr, and still the documented exit code (not the
    interpreter's 1 for an uncaught exception)."""
    import traceback

    traceback.print_exc()
    return code


def _interrupted(argv: list[str] | None) -> int:
    """Ctrl-C: outputs were already cleaned up by the commands' handlers; exit 130."""
    click.echo("error: interrupted", err=True)
    if argv is None:
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    return EXIT_INTERRUPTED


def _stdout_closed() -> int:
    """The reader of stdout went away (``hwbench devices --json | head -c0``): not an error of ours.

    Exit 0 quietly: output files were already complete, and nothing more can be said on stdout.
    stdout is pointed at /dev/null so the interpreter's final flush does not fail again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout may be a StringIO in tests
        pass
    return EXIT_OK


def _show_plugin_warnings() -> None:
    """Configuration warnings of the plugin host (unknown names in HWBENCH_*), once, on stderr."""
    from hwbench.core import plugins

    registry = plugins._cached
    if registry is not None and registry.warnings:
        for message in registry.warnings:
            click.echo(f"warning: {message}", err=True)
        registry.warnings = []


if __name__ == "__main__":
    sys.exit(main())
