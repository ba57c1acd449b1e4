"""The GroqWare SDK, or this shim in its place: one object with the SDK's surface.

Code that runs a program on the GroqChip does::

    sdk = load_sdk()                                  # the real GroqWare SDK if usable, else the shim
    iop = sdk.compile(onnx_path, out_dir, name="output", numerics=profile)
    program = sdk.tsp.create_tsp_runner(str(iop))     # groq.runner.tsp (or the shim's)
    outputs = program(state_0=..., in_i_app=...)      # dict of named numpy outputs

With the SDK, ``compile`` invokes ``groq-compiler`` (``--save-stats``, ``-o``) and the assembler
``aa-latest`` (``--output-iop``) as GroqFlow and the founding study's runners do, and ``tsp`` is
``groq.runner.tsp``; the ``numerics`` flag is then only recorded (the chip has its own
arithmetic). Without it, ``compile`` is :func:`hwbench.plugins.groqware_shim.compiler.compile`
and ``tsp`` is :mod:`hwbench.plugins.groqware_shim.runner.tsp`.

The SDK counts as usable only when all of these are found (checked cheaply, in this order):
the ``groq`` Python package, ``groq-compiler`` and ``aa-latest`` on ``PATH`` or in
``/usr/local/groq/bin``, a GroqCard on the PCI bus (vendor id ``0x1de0``, as GroqFlow checks),
and finally the module ``groq.runner.tsp`` (the PyPI package named ``groq`` is an unrelated
web-API client, so the package alone proves nothing).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

SDK_BIN = Path("/usr/local/groq/bin")
PCI_DEVICES = Path("/sys/bus/pci/devices")
GROQ_PCI_VENDOR = "0x1de0"
TOOLS = ("groq-compiler", "aa-latest")
LOOKED_FOR = (
    "the GroqWare SDK (Python module groq.runner.tsp; groq-compiler and aa-latest on PATH or in "
    f"{SDK_BIN}) and a GroqCard (PCI vendor {GROQ_PCI_VENDOR})"
)


def find_tool(tool: str) -> str | None:
    """Where an SDK command-line tool is, as GroqFlow looks for it."""
    found = shutil.which(tool)
    if found:
        return found
    candidate = SDK_BIN / tool
    return str(candidate) if candidate.is_file() else None


def groq_cards() -> int:
    """GroqCards on the PCI bus (sysfs vendor ids; no subprocess)."""
    count = 0
    try:
        for vendor in PCI_DEVICES.glob("*/vendor"):
            try:
                if vendor.read_text().strip().lower() == GROQ_PCI_VENDOR:
                    count += 1
            except OSError:
                continue
    except OSError:
        return 0
    return count


def real_sdk_status() -> tuple[bool, str]:
    """(usable, what was found or what is missing), cheapest checks first."""
    if importlib.util.find_spec("groq") is None:
        return False, "Python package 'groq' (GroqWare runtime) not installed"
    missing = [tool for tool in TOOLS if find_tool(tool) is None]
    if missing:
        return False, f"{', '.join(missing)} not on PATH or in {SDK_BIN}"
    cards = groq_cards()
    if cards == 0:
        return False, f"no GroqCard on the PCI bus (vendor {GROQ_PCI_VENDOR})"
    try:
        runner = importlib.util.find_spec("groq.runner.tsp")
    except (ImportError, ValueError):
        runner = None
    if runner is None:
        return False, "the installed 'groq' package has no groq.runner.tsp (it is not the GroqWare runtime)"
    return True, f"GroqWare SDK (groq.runner.tsp, {find_tool(TOOLS[0])}) with {cards} GroqCard(s)"


def _run_tool(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        from hwbench.plugins.groqware_shim.compiler import GroqCompilerError

        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        raise GroqCompilerError(f"{what} failed (exit {proc.returncode}): {tail[:400]}")


def real_compile(onnx_path: str | Path, out_dir: str | Path, **flags: Any) -> Path:
    """``groq-compiler`` then ``aa-latest``, as GroqFlow and the study's runners invoke them."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = str(flags.get("name", "output"))
    prefix = out_dir / name
    stats = Path(flags.get("save_stats", out_dir / "stats.json"))
    compiler, assembler = find_tool(TOOLS[0]), find_tool(TOOLS[1])
    if compiler is None or assembler is None:
        from hwbench.core.errors import UnavailableError

        raise UnavailableError(f"GroqWare tools not found ({', '.join(TOOLS)} on PATH or in {SDK_BIN})")
    large = ["--large-program"] if flags.get("large_program") else []
    _run_tool([compiler, str(onnx_path), *large, "--save-stats", str(stats), "-o", str(prefix)], "groq-compiler")
    iop = out_dir / f"{name}.iop"
    _run_tool([assembler, "--name", name, *large, "-i", f"{prefix}.aa", "--output-iop", str(iop)], "aa-latest")
    return iop  # a ``numerics`` flag is ignored: the chip computes with its own arithmetic


@dataclass
class GroqSdk:
    """The SDK surface hwbench uses: ``compile`` and the ``tsp`` runner module."""

    name: str
    real: bool
    tsp: ModuleType
    _compile: Any
    detail: str = ""

    def compile(self, onnx_path: str | Path, out_dir: str | Path, **flags: Any) -> Path:
        return Path(self._compile(onnx_path, out_dir, **flags))


def load_sdk(*, allow_real: bool = True) -> GroqSdk:
    """The real GroqWare SDK when usable here (and allowed), else the shim."""
    if allow_real:
        usable, detail = real_sdk_status()
        if usable:
            tsp = importlib.import_module("groq.runner.tsp")
            return GroqSdk("groqware", True, tsp, real_compile, detail)
    from hwbench.plugins.groqware_shim import compiler
    from hwbench.plugins.groqware_shim.runner import tsp as shim_tsp

    return GroqSdk("groqware-shim", False, shim_tsp, compiler.compile, "hwbench GroqWare shim (emulated GroqChip)")
