"""Edges a new user met (issue 33): a closed stdout, ``--debug`` exit codes, a store that is not one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hwbench.core import plugins as host
from hwbench.core.errors import EXIT_INTERNAL, EXIT_USAGE
from hwbench.testing.badinput import run_cli

HWBENCH = [sys.executable, "-m", "hwbench.cli.main"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HWBENCH_")}
    return {**env, "HWBENCH_STORE": "none", **extra}


def test_devices_json_with_stdout_closed_exits_0_quietly() -> None:
    """``hwbench devices --json >&-``: nothing can be said; not an internal error (was exit 3)."""
    argv = [*HWBENCH, "devices", "--json"]
    out = subprocess.run(
        argv, stderr=subprocess.PIPE, text=True, env=_env(), timeout=300, preexec_fn=lambda: os.close(1)
    )
    assert out.returncode == 0, out.stderr
    assert "internal error" not in out.stderr and "Traceback" not in out.stderr


def test_debug_keeps_the_documented_exit_code_for_a_strict_plugin_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--debug`` with HWBENCH_STRICT_PLUGINS=1: the traceback, and exit 3 (not the interpreter's 1)."""

    monkeypatch.setitem(host.BUILTIN_PLUGINS, "builtin-broken", "hwbench.plugins.devices._no_such_module")
    monkeypatch.setenv("HWBENCH_STRICT_PLUGINS", "1")
    monkeypatch.setattr(host, "_cached", None)  # this test loads its own registry under that environment
    outcome = run_cli(["--debug", "devices"])
    assert outcome.code == EXIT_INTERNAL
    assert "Traceback" in outcome.stderr and "PluginError" in outcome.stderr and "_no_such_module" in outcome.stderr


def test_debug_keeps_exit_2_for_a_usage_error_in_a_real_process() -> None:
    out = subprocess.run([*HWBENCH, "--debug", "run", "--device", "nope"], capture_output=True, text=True,
                         env=_env(), timeout=300)  # fmt: skip
    assert out.returncode == EXIT_USAGE
    assert "Traceback" in out.stderr and "unknown device 'nope'" in out.stderr


def test_recording_into_a_file_that_is_not_a_store_warns_and_keeps_the_result(tmp_path: Path) -> None:
    (tmp_path / "notes.sqlite").write_text("my notes\n")
    argv = ["run", "--engine", "numpy", "--cells", "64", "--ms", "1", "--store", str(tmp_path / "notes.sqlite")]
    outcome = run_cli([*argv, "--out", str(tmp_path / "r.json")])
    assert outcome.code == 0, outcome.stderr
    assert "is not a hwbench store" in outcome.stderr and (tmp_path / "r.json").exists()
    assert (tmp_path / "notes.sqlite").read_text() == "my notes\n"
