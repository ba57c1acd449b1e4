"""Third-party plugins, installed for real: ``pip install`` into a fresh virtualenv, then the real CLI.

The distributions under ``tests/plugin_dists/`` and the plugin that ``docs/plugin-authors.md`` builds
(its ``# file:`` code blocks, extracted here) are built and installed with pip, next to a
non-editable install of hwbench itself, into one throwaway virtualenv shared by this module;
every check goes through the installed ``hwbench`` console script, the way a user meets a plugin.
``hwbench-example`` is kept written against plugin contract 1 (the old ``executor`` signature):
it must keep working through the host's adapter.

Installing hwbench's dependencies (JAX, TensorFlow, ...) into a new virtualenv would take minutes
and needs the network, so the new environment borrows them instead: a ``.pth`` file appends the
running interpreter's site-packages to its ``sys.path``. The path is appended (not processed with
``site.addsitedir``), so the running environment's own hwbench — usually an editable install of
this checkout — is never imported there: ``test_hwbench_is_the_installed_copy`` checks that.

hwbench is installed non-editable from a copy of its sources: that proves the built wheel
contains every subpackage and the console script, and leaves no build artefacts in the checkout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DISTS = Path(__file__).resolve().parent / "plugin_dists"
AUTHORS_GUIDE = REPO / "docs" / "plugin-authors.md"
BROKEN = {
    # entry-point name -> what its error must say
    "broken-import": "ImportError: needs vendor SDK libfoo.so",
    "broken-hook": "hwbench_kernels raised RuntimeError: kernel catalogue /opt/foo/kernels.json not found",
    "dup-cpu": "device 'cpu' is already registered by plugin 'builtin-cpu'",
    "future-contract": "needs hwbench plugin contract 99; this hwbench implements contract 3 (upgrade hwbench)",
}
THIRD_PARTY = {"example", "acme", *BROKEN}
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info", ".pytest_cache")


@dataclass
class Venv:
    root: Path
    python: Path
    hwbench: Path
    env: dict[str, str]
    example_src: Path
    acme_src: Path
    broken_builtins: list[str]

    def run(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args], cwd=self.root, env={**self.env, **env}, capture_output=True, text=True, timeout=300
        )

    def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return self.run(self.hwbench, *args, **env)

    def json(self, *args: str, **env: str) -> Any:
        proc = self.cli(*args, "--json", **env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    @property
    def quiet_builtins(self) -> dict[str, str]:
        """Environment switching off the built-in plugins that fail (see the fixture)."""
        return {"HWBENCH_DISABLE_PLUGINS": ",".join(self.broken_builtins)}

    def plugins(self, **env: str) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in self.json("plugins", **env)}


def _clean_env() -> dict[str, str]:
    """The caller's environment without anything that would change which code or plugins load."""
    drop = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PIP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HWBENCH_", *drop))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.update(PYTHONDONTWRITEBYTECODE="1", NO_COLOR="1", COLUMNS="200")
    return env


def write_guide_plugin(guide: Path, dest: Path) -> list[str]:
    """Write every code block of ``guide`` whose first line is ``# file: PATH`` to ``dest/PATH``."""
    blocks = re.findall(r"```[a-z]*\n# file: (\S+)\n(.*?)```", guide.read_text(), flags=re.DOTALL)
    for relative, body in blocks:
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    return [relative for relative, _ in blocks]


def _venv_purelib(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def _require_build_backend() -> None:
    """--no-build-isolation builds with the running environment's setuptools and wheel."""
    missing = [name for name in ("setuptools", "wheel") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"the plugin-installation test needs {' and '.join(missing)} here: pip install -e '.[test]'")


def _install(root: Path, env: dict[str, str], dists: list[Path]) -> Path:
    """A fresh virtualenv under ``root`` holding a non-editable copy of this checkout's hwbench and
    the distributions ``dists``, installed by one offline pip run; its bin folder."""
    # 1. An empty virtualenv (no pip of its own: the borrowed one installs into it).
    venv_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv_dir)], check=True, env=env)
    bindir = venv_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    host = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (_venv_purelib(python) / "_hwbench_host_site.pth").write_text("".join(f"{p}\n" for p in sorted(host)))
    # 2. hwbench's sources copied out of the checkout, so pip's in-tree builds leave nothing behind.
    hwbench_src = root / "src" / "hwbench"
    hwbench_src.mkdir(parents=True)
    shutil.copytree(REPO / "hwbench", hwbench_src / "hwbench", ignore=_IGNORE)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, hwbench_src / name)
    # 3. One offline pip run. --ignore-installed: never touch (uninstall) the borrowed environment's
    #    own hwbench, which pip can see through the .pth file.
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--ignore-installed",
         "-q", str(hwbench_src), *map(str, dists)],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert pip.returncode == 0, f"pip install failed:\n{pip.stdout}\n{pip.stderr}"
    return bindir


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    _require_build_backend()
    root = tmp_path_factory.mktemp("plugin-install").resolve()
    env = _clean_env()
    src = root / "src"
    for dist in ("hwbench-example", "hwbench-broken"):
        shutil.copytree(DISTS / dist, src / dist, ignore=_IGNORE)
    write_guide_plugin(AUTHORS_GUIDE, src / "hwbench-acme")
    dists = [src / "hwbench-example", src / "hwbench-broken", src / "hwbench-acme"]
    bindir = _install(root, env, dists)
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    venv = Venv(root, python, bindir / "hwbench", env, src / "hwbench-example", src / "hwbench-acme", [])
    # Built-in plugins that fail are caught by tests/test_cli_listing.py; the strict-mode tests
    # here switch them off so that each of them fails for the one reason it is about.
    plugins = venv.plugins()
    venv.broken_builtins = sorted(n for n, p in plugins.items() if p["source"] == "builtin" and p["status"] == "failed")
    return venv


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_hwbench_is_the_installed_copy(venv: Venv) -> None:
    proc = venv.run(venv.python, "-c", "import hwbench, hwbench_example; print(hwbench.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).resolve().is_relative_to(venv.root / "venv")
    assert venv.cli("--version").stdout.startswith("hwbench, version ")


def test_installed_distribution_ships_py_typed(venv: Venv) -> None:
    """``py.typed`` tells plugin authors' type checkers to trust hwbench's (checked) annotations:
    it must be among the files of the distribution that pip installed (not only in the checkout)."""
    code = "import importlib.metadata as m; print('\\n'.join(str(f) for f in m.files('hwbench') or ()))"
    proc = venv.run(venv.python, "-c", code)
    assert proc.returncode == 0, proc.stderr
    files = set(proc.stdout.split())
    assert "hwbench/py.typed" in files, sorted(f for f in files if not f.endswith(".py"))[:20]


def test_installed_plugin_device_is_listed(venv: Venv) -> None:
    devices = {d["name"]: d for d in venv.json("devices")}
    assert {"cpu", "example-dsp"} <= set(devices)
    dsp = devices["example-dsp"]
    assert dsp["status"] == "emulated"
    assert "fp32" in dsp["reason"]
    assert dsp["spec"]["vendor"] == "Example Corp"
    assert dsp["spec"]["sources"]
    assert dsp["modes"] == ["fp32"]
    # the built-in CPU keeps its name: the impostor registering 'cpu' lost
    assert devices["cpu"]["spec"]["vendor"] != "Impostor Inc"
    assert "example-rms-deviation" in {m["name"] for m in venv.json("metrics")}


def test_plugins_lists_each_third_party_plugin_with_its_outcome(venv: Venv) -> None:
    plugins = venv.plugins()
    example = plugins["example"]
    assert example["source"] == "entry point"
    assert (example["distribution"], example["version"]) == ("hwbench-example", "0.1.0")
    assert example["status"] == "loaded"
    assert example["provides"] == {
        "devices": ["example-dsp"],
        "metrics": ["example-rms-deviation"],
        "protocols": ["example-range"],
    }
    for name, error in BROKEN.items():
        assert plugins[name]["status"] == "failed", plugins[name]
        assert plugins[name]["distribution"] == "hwbench-broken"
        assert error in plugins[name]["error"]
        assert plugins[name]["provides"] == {}
    assert plugins["builtin-cpu"]["provides"]["devices"] == ["cpu"]


def test_broken_plugins_do_not_break_the_cli(venv: Venv) -> None:
    proc = venv.cli("devices")  # the table, not --json: the human path must survive too
    assert proc.returncode == 0, proc.stderr
    assert "example-dsp" in proc.stdout
    assert "Traceback" not in proc.stderr
    # rich wraps long diagnostics at the terminal width (see test_cli_listing), so unwrap first
    warning = " ".join(proc.stderr.split())
    assert warning.count("plugin(s) failed to load") == 1
    assert all(name in warning for name in BROKEN)
    assert "(see 'hwbench plugins')" in warning


def test_disable_plugins_hides_the_example(venv: Venv) -> None:
    devices = {d["name"] for d in venv.json("devices", HWBENCH_DISABLE_PLUGINS="example")}
    assert "example-dsp" not in devices
    assert "cpu" in devices
    status = venv.plugins(HWBENCH_DISABLE_PLUGINS="example")["example"]
    assert (status["status"], status["provides"]) == ("disabled", {})


def test_empty_allowlist_loads_no_third_party_plugin(venv: Venv) -> None:
    proc = venv.cli("devices", "--json", HWBENCH_LOAD_PLUGINS="")
    assert proc.returncode == 0, proc.stderr
    assert "example-dsp" not in {d["name"] for d in json.loads(proc.stdout)}
    for name, status in venv.plugins(HWBENCH_LOAD_PLUGINS="").items():
        if name in THIRD_PARTY:
            assert status["status"] == "disabled", status
        else:
            assert status["source"] == "builtin"  # the allowlist applies to entry points only
    assert not any(name in proc.stderr for name in THIRD_PARTY)


def test_strict_mode_accepts_a_healthy_plugin(venv: Venv) -> None:
    proc = venv.cli(
        "devices", "--json", HWBENCH_STRICT_PLUGINS="1", HWBENCH_LOAD_PLUGINS="example", **venv.quiet_builtins
    )
    assert proc.returncode == 0, proc.stderr
    assert "example-dsp" in {d["name"] for d in json.loads(proc.stdout)}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_strict_mode_turns_a_broken_plugin_into_exit_3(venv: Venv, name: str) -> None:
    proc = venv.cli("devices", HWBENCH_STRICT_PLUGINS="1", HWBENCH_LOAD_PLUGINS=name, **venv.quiet_builtins)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    line = _one_line_error(proc)
    assert line.startswith(f"error: plugin '{name}' failed: ")
    assert BROKEN[name] in line
    assert proc.stdout == ""


def test_strict_mode_with_every_plugin_fails_on_the_first_broken_one(venv: Venv) -> None:
    proc = venv.cli("plugins", HWBENCH_STRICT_PLUGINS="1", **venv.quiet_builtins)
    assert proc.returncode == 3
    line = _one_line_error(proc)
    assert any(line.startswith(f"error: plugin '{name}' failed: ") for name in BROKEN), line


def test_the_plugin_authors_own_tests_pass(venv: Venv) -> None:
    # What a plugin author runs in their repository, against the installed hwbench.
    proc = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", venv.example_src / "tests")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout


# --- the plugin docs/plugin-authors.md builds ------------------------------------------------------
def test_the_guide_builds_a_whole_plugin() -> None:
    """Every file the guide's worked example needs is a `# file:` block of the page."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = write_guide_plugin(AUTHORS_GUIDE, Path(tmp))
    assert {"pyproject.toml", "src/hwbench_acme/plugin.py", "src/hwbench_acme/device.py",
            "src/hwbench_acme/metric.py", "src/hwbench_acme/engine.py", "tests/test_acme.py"} <= set(files)  # fmt: skip


def test_the_guide_plugin_is_loaded_on_the_current_contract(venv: Venv) -> None:
    acme = venv.plugins()["acme"]
    assert acme["status"] == "loaded", acme["error"]
    assert acme["contract"] == 3 and acme["notes"] == []
    assert acme["provides"] == {"engines": ["acme-sim"], "devices": ["acme-npu"], "metrics": ["acme-max-rel-dev"]}


def test_the_guide_plugins_own_tests_pass(venv: Venv) -> None:
    """The conformance suite and the guide's tests, run the way its author would."""
    proc = venv.run(venv.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", venv.acme_src / "tests")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


def test_the_guide_device_audits_cleanly_through_the_cli(venv: Venv) -> None:
    """`hwbench audit --quick` on a device written from the docs alone: a verdict, never exit 3."""
    out = venv.root / "acme-audit"
    proc = venv.cli("audit", "--device", "acme-npu", "--set", "transcendental_bits=12", "--quick", "--out", str(out))
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"] in ("PASS", "WARN", "FAIL")
    candidates = [r for p in report["protocols"] for r in p["runs"] if r["role"] == "candidate"]
    assert candidates and all(r["device"] == "acme-npu" and r["execution"] == "emulated" for r in candidates)
    assert all(r["profile"] == "acme-npu-default" for r in candidates)
    assert all("max_rel" in r["metrics"]["acme-max-rel-dev"] for r in candidates)


def test_the_guide_plugins_tests_survive_a_contract_bump(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The guide's plugin as written for the contract before this hwbench's, its own test file
    unchanged, run with pytest against this hwbench. A plugin written for contract N keeps loading
    on N + 1 (the host adapts it), so its tests must keep passing too: they assert the contract the
    plugin declares (``HWBENCH_CONTRACT``), never the host's (``api.CONTRACT_VERSION``)."""
    from hwbench.api import CONTRACT_VERSION

    _require_build_backend()
    root = tmp_path_factory.mktemp("plugin-older-contract").resolve()
    env = _clean_env()
    acme = root / "src" / "hwbench-acme"
    write_guide_plugin(AUTHORS_GUIDE, acme)
    plugin = acme / "src" / "hwbench_acme" / "plugin.py"
    declared = re.compile(r"^HWBENCH_CONTRACT = (\d+)\b", flags=re.MULTILINE)
    found = declared.findall(plugin.read_text())
    assert found == [str(CONTRACT_VERSION)], f"the guide's plugin declares {found}"
    older = CONTRACT_VERSION - 1
    plugin.write_text(declared.sub(f"HWBENCH_CONTRACT = {older}", plugin.read_text()))
    bindir = _install(root, env, [acme])
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    older_venv = Venv(root, python, bindir / "hwbench", env, acme, acme, [])
    status = older_venv.plugins()["acme"]
    assert (status["status"], status["contract"]) == ("loaded", older), status  # the host's is newer
    proc = older_venv.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", acme / "tests" / "test_acme.py")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and " failed" not in proc.stdout


# --- a third-party audit protocol (plugin contract 3) ------------------------------------------------
def test_a_third_party_protocol_is_installed_and_run_by_hwbench_audit(venv: Venv) -> None:
    proc = venv.cli("audit", "--device", "example-dsp", "--device", "cpu:fp32", "--protocol", "example-range", "--json")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    (protocol,) = report["protocols"]
    assert protocol["protocol"] == "example-range" and protocol["runs"][0]["role"] == "reference"
    verdicts = {v["device"]: v for v in protocol["verdicts"]}
    assert set(verdicts) == {"example-dsp", "cpu"} and verdicts["cpu"]["verdict"] == "PASS"
    assert verdicts["cpu"]["score"] == 0.0  # the CPU fp32 candidate is the reference's own arithmetic
    table = venv.cli("audit", "--device", "example-dsp", "--protocol", "example-range")
    assert table.returncode in (0, 1) and "rel. diff" in table.stdout


# --- a plugin written against plugin contract 1 ------------------------------------------------------
def test_a_contract_1_plugin_is_listed_and_adapted(venv: Venv) -> None:
    example = venv.plugins()["example"]
    assert example["status"] == "loaded" and example["contract"] == 1
    assert any("plugin contract 1" in note and "adapter" in note for note in example["notes"])
    table = venv.cli("plugins")
    assert table.returncode == 0 and "adapter" in " ".join(table.stdout.split())


def test_a_contract_1_device_audits_through_the_adapter(venv: Venv) -> None:
    proc = venv.cli("audit", "--device", "example-dsp", "--quick", "--protocol", "validation", "--json")
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert {v["device"] for p in report["protocols"] for v in p["verdicts"]} == {"example-dsp"}
