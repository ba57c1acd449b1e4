"""The listing commands and the CLI's error contract: JSON on stdout, one-line errors, exit codes.

Most tests call ``hwbench.cli.main.main`` in process (fast); the start-up guard and one
end-to-end call run a fresh interpreter, since what a cold ``hwbench`` imports is the point.
They rely only on the ``cpu`` device and the ``leaky-ring`` kernel among the built-ins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from hwbench import __version__
from hwbench.cli.main import main
from hwbench.core import plugins as host
from hwbench.core.hookspecs import hookimpl

LISTINGS = ("devices", "kernels", "metrics", "engines", "plugins", "protocols")
# Imported lazily by the engines that need them; a listing command must never pay for them.
HEAVY = ("jax", "jaxlib", "tensorflow", "onnxruntime", "onnx", "tf2onnx", "torch")


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Each test loads the plugins itself, unaffected by the caller's HWBENCH_* settings."""
    for key in ("HWBENCH_LOAD_PLUGINS", "HWBENCH_DISABLE_PLUGINS", "HWBENCH_STRICT_PLUGINS", "HWBENCH_DEBUG"):
        monkeypatch.delenv(key, raising=False)
    host.reset_registry()
    yield
    host.reset_registry()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)  # stdout holds the JSON document and nothing else


def test_devices_json_describes_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    records = {r["name"]: r for r in run_json(capsys, "devices")}
    cpu = records["cpu"]
    assert cpu["status"] in ("real", "emulated", "unavailable")
    assert isinstance(cpu["reason"], str) and cpu["reason"]
    assert cpu["default_mode"] in cpu["modes"]
    assert set(cpu["profiles"]) == set(cpu["modes"])
    assert cpu["spec"]["name"] == "cpu" and cpu["spec"]["sources"]
    for record in records.values():  # every device says whether it runs here, and why
        assert record["status"] in ("real", "emulated", "unavailable") and record["reason"], record


def test_the_devices_table_builds_only_the_default_modes_profiles(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table shows each device's default-mode profile, so it builds that one and no other (the
    JSON, which lists every mode's, builds them all)."""
    built: list[tuple[str, str | None]] = []
    for device in host.get_registry().devices.values():

        def counting(mode: str | None = None, overrides: Any = None, _device: Any = device) -> Any:
            built.append((_device.name, mode))
            return type(_device).numerics(_device, mode, overrides)

        monkeypatch.setattr(device, "numerics", counting)
    code, _, err = run(capsys, "devices")
    assert code == 0, err
    defaults = {(d.name, d.default_mode) for d in host.get_registry().devices.values()}
    assert set(built) == defaults
    built.clear()
    assert run_json(capsys, "devices") and ("groq", "fp32-exact-vector") in built


class Printed:
    """What a command printed, table by table and line by line (the terminal's width left out)."""

    def __init__(self) -> None:
        self.tables: list[tuple[str, list[str], list[list[str]]]] = []
        self.lines: list[str] = []

    def table(self, title: str, columns: Any, rows: Any, **_: Any) -> None:
        self.tables.append((title, list(columns), [[str(v) for v in row] for row in rows]))

    def line(self, text: str) -> None:
        self.lines.append(text)


@pytest.fixture
def printed(monkeypatch: pytest.MonkeyPatch) -> Printed:
    from hwbench.cli import device_view, listing

    seen = Printed()
    monkeypatch.setattr(listing, "print_table", seen.table)
    monkeypatch.setattr(device_view, "print_table", seen.table)
    monkeypatch.setattr(device_view, "_line", seen.line)
    return seen


def test_the_devices_table_shows_profile_confidence_and_knobs(
    capsys: pytest.CaptureFixture[str], printed: Printed
) -> None:
    assert run(capsys, "devices")[0] == 0
    ((_, columns, rows),) = printed.tables
    by_name = {row[0]: dict(zip(columns, row, strict=True)) for row in rows}
    device = host.get_registry().device("groq")
    profile = device.numerics(device.default_mode)
    assert by_name["groq"]["profile (default mode)"] == f"{profile.name} ({profile.confidence().value})"
    assert by_name["groq"]["knobs (--set)"] == ", ".join(device.settable(device.default_mode))
    assert by_name["cpu"]["profile (default mode)"].endswith("(native)")


def test_devices_name_shows_one_device_in_full(capsys: pytest.CaptureFixture[str], printed: Printed) -> None:
    device = host.get_registry().device("groq")
    assert run(capsys, "devices", "groq")[0] == 0
    titles = [title for title, _, _ in printed.tables]
    text = "\n".join([*printed.lines, *(" ".join(c for row in rows for c in row) for _, _, rows in printed.tables)])
    for mode in device.modes:  # every mode's profile, its op classes, knobs and notes
        profile = device.numerics(mode)
        assert any(f"profile {profile.name}" in t for t in titles)
        assert all(f"{knob} {value}" in text for knob, value in device.settable(mode).items())
        assert all(f"  - {note}" in printed.lines for note in profile.notes)
    numbered = [line for line in printed.lines if line.startswith("[")]
    assert all(any(line.endswith(f"] {source}") for line in numbered) for source in device.spec.sources)
    assert device.spec.model in text


def test_devices_name_json_and_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    one = run_json(capsys, "devices", "groq")
    assert one == next(r for r in run_json(capsys, "devices") if r["name"] == "groq")
    code, out, err = run(capsys, "devices", "grok")
    assert (code, out) == (2, "") and "Did you mean 'groq'?" in err


def test_kernels_json(capsys: pytest.CaptureFixture[str]) -> None:
    kernels = {k["name"]: k for k in run_json(capsys, "kernels")}
    ring = kernels["leaky-ring"]
    assert ring["state_names"] == ["v", "w"]
    assert "gather" in ring["op_classes"]


def test_metrics_json(capsys: pytest.CaptureFixture[str]) -> None:
    for metric in run_json(capsys, "metrics"):
        assert metric["kind"] in ("accuracy", "performance", "check", "static", "workload", "energy")
        assert metric["name"] and metric["unit"] is not None


def test_engines_json(capsys: pytest.CaptureFixture[str]) -> None:
    for engine in run_json(capsys, "engines"):
        assert isinstance(engine["available"], bool)
        assert engine["available"] or engine["reason"], engine  # unavailable: say why
        assert engine["dtypes"]


def test_plugins_json(capsys: pytest.CaptureFixture[str]) -> None:
    plugins = {p["name"]: p for p in run_json(capsys, "plugins")}
    cpu = plugins["builtin-cpu"]
    assert (cpu["source"], cpu["status"], cpu["error"]) == ("builtin", "loaded", None)
    assert cpu["provides"]["devices"][0] == "cpu"
    assert "leaky-ring" in plugins["builtin-kernels"]["provides"]["kernels"]


def test_every_builtin_plugin_loads(capsys: pytest.CaptureFixture[str]) -> None:
    plugins = run_json(capsys, "plugins")
    assert {p["name"]: p["error"] for p in plugins if p["source"] == "builtin" and p["status"] != "loaded"} == {}


@pytest.mark.parametrize("command", LISTINGS)
def test_tables_render(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = run(capsys, command)
    assert code == 0
    assert command.capitalize() in out  # the table's title


def test_unknown_command_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "nope")
    assert (code, out) == (2, "")
    message, *rest = err.splitlines()
    assert message.startswith("error: unknown command 'nope'; choose from: ")
    assert all(name in message for name in LISTINGS)
    assert rest == [] and message.endswith("(see 'hwbench --help')")  # one line, with the hint


def test_a_typo_suggests_the_nearest_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "devics")
    assert code == 2
    assert "Did you mean 'devices'?" in err.splitlines()[0]


@pytest.mark.parametrize("argv", [["--bogus"], ["devices", "--bogus"], ["devices", "extra-arg"]])
def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("error: ")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version") == (0, f"hwbench, version {__version__}\n", "")


def test_help_lists_the_commands_and_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert all(name in out for name in LISTINGS)
    assert "Exit codes" in out


def test_failed_plugins_are_a_warning_not_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken:
        @hookimpl
        def hwbench_devices(self) -> list[Any]:
            raise RuntimeError("no chip")

    monkeypatch.setattr(host, "_cached", host.load_registry(extra={"broken": Broken()}))
    code, out, err = run(capsys, "devices", "--json")
    assert code == 0
    assert "cpu" in {d["name"] for d in json.loads(out)}
    assert "broken" in err and "failed to load" in err


def test_strict_plugin_failure_is_exit_3_and_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken:
        @hookimpl
        def hwbench_devices(self) -> list[Any]:
            raise RuntimeError("no chip")

    monkeypatch.setenv("HWBENCH_STRICT_PLUGINS", "1")
    extra = {"broken": Broken()}
    monkeypatch.setattr("hwbench.cli.listing.get_registry", lambda: host.load_registry(builtins=False, extra=extra))
    code, out, err = run(capsys, "devices")
    assert (code, out) == (3, "")
    assert err == "error: plugin 'broken' failed: hwbench_devices raised RuntimeError: no chip\n"


def test_a_long_warning_stays_on_one_line(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        @hookimpl
        def hwbench_devices(self) -> list[Any]:
            raise RuntimeError("no chip")

    extra = {f"plugin-{i}-{'x' * 80}": Broken() for i in range(4)}  # a 350-character warning
    monkeypatch.setattr(host, "_cached", host.load_registry(builtins=False, entry_point_plugins=False, extra=extra))
    code, _, err = run(capsys, "devices", "--json")
    assert code == 0
    assert len(err.splitlines()) == 1, err


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def test_end_to_end_in_a_fresh_interpreter() -> None:
    proc = _python("import sys; from hwbench.cli.main import main; sys.exit(main())", "devices", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "cpu" in {d["name"] for d in json.loads(proc.stdout)}
    assert "Traceback" not in proc.stderr


def test_listing_commands_do_not_import_heavy_frameworks() -> None:
    # The real guard of the start-up target (benchmarks/cli_startup.py prints the timings):
    # JAX, TensorFlow or ONNX Runtime imported here would cost seconds on every `hwbench` call.
    script = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from hwbench.cli.main import main
        codes = {}
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            for argv in (["--help"], *([name, "--json"] for name in sys.argv[1:]), ["devices"]):
                codes[" ".join(argv)] = main(argv)
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
        print(json.dumps({"codes": codes, "heavy": heavy}))
        """
    ).replace("HEAVY", repr(HEAVY))
    proc = _python(script, *LISTINGS)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert set(result["codes"].values()) == {0}, result["codes"]
    assert result["heavy"] == []


def test_devices_imports_no_numpy() -> None:
    # Issue 31's 0.3 s for `hwbench devices`: numpy alone costs ~90 ms of it, and the listing needs
    # no array, so every module on this path imports numpy inside the functions that compute.
    script = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from hwbench.cli.main import main
        codes = []
        with contextlib.redirect_stdout(io.StringIO()):
            for argv in (["devices"], ["devices", "--json"]):
                codes.append(main(argv))
        numpy_importers = sorted(m for m in sys.modules if m.split(".")[0] == "numpy")
        print(json.dumps({"codes": codes, "numpy": numpy_importers[:5]}))
        """
    )
    proc = _python(script)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["codes"] == [0, 0]
    assert result["numpy"] == []


def test_devices_imports_no_other_command_and_help_lists_them_all() -> None:
    # `hwbench devices` imports only the listing commands' module (docs/cli.md, "Start-up time"); a
    # command's module loads when it is looked up, and --help (every command) loads them all.
    script = textwrap.dedent(
        """
        import contextlib, io, json, sys
        from hwbench.cli.main import BUILTIN_COMMANDS, cli, main
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(["devices", "--json"])
        after_devices = sorted(m for m in set(BUILTIN_COMMANDS.values()) if m in sys.modules)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            main(["--help"])
        print(json.dumps({"code": code, "after_devices": after_devices, "help": out.getvalue(),
                          "commands": sorted(cli.commands), "builtin": sorted(BUILTIN_COMMANDS)}))
        """
    )
    proc = _python(script)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["code"] == 0 and result["after_devices"] == ["hwbench.cli.listing"]
    assert set(result["builtin"]) <= set(result["commands"])
    for name in result["builtin"]:
        assert f"\n  {name} " in result["help"], name
