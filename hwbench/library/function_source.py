"""A function and its arguments named on the command line: ``--function MODULE:NAME --inputs args.npz``.

``MODULE:NAME`` imports ``MODULE`` as ``python -m`` would (the working folder first on the import
path, then the installed packages) and takes its attribute ``NAME`` (``NAME.attr`` for a nested
one). Importing a module runs its code: that is what the user asks for by naming it, as with
``python -m MODULE``. The arguments are the arrays of an ``.npz`` file (``numpy.savez``), passed in
key order ``arg0``, ``arg1``, ...: the file holds exactly those keys, numeric arrays, no pickles.
Nothing in the file is executed.
"""

from __future__ import annotations

import importlib
import re
import sys
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.files import check_input_file

SPEC = re.compile(r"^(?P<module>[A-Za-z_][\w.]*):(?P<name>[A-Za-z_][\w.]*)$")


def load_function(spec: str) -> Callable[..., Any]:
    """The callable named ``MODULE:NAME`` (a UsageError naming what is wrong, one line)."""
    match = SPEC.match(spec or "")
    if match is None:
        raise UsageError(
            f"--function {spec!r}: expected MODULE:NAME, a module importable from here and a function in it "
            "(e.g. --function solver:step)"
        )
    module_name, name = match["module"], match["name"]
    sys.path.insert(0, str(Path.cwd()))  # as python -m does
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"--function {spec}: no module named {exc.name!r} (from this folder or the installed packages)"
        ) from None
    except Exception as exc:  # the user's module failed while it was imported
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(
            f"--function {spec}: importing {module_name} raised {type(exc).__name__}: {first[:200]}"
        ) from None
    finally:
        sys.path.remove(str(Path.cwd()))
    target: Any = module
    for part in name.split("."):
        if not hasattr(target, part):
            raise UsageError(f"--function {spec}: module {module_name} has no attribute {name!r}")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"--function {spec}: {name} is a {type(target).__name__}, not a function")
    return target  # type: ignore[no-any-return]


def load_arguments(path: str | Path) -> list[np.ndarray]:
    """The positional arguments held by an ``.npz`` (``arg0``, ``arg1``, ...), numeric arrays only.
    The arrays' sizes are read from their headers first: more than this host's memory is refused
    (exit 4) before anything is allocated."""
    from hwbench.core.kernel import _npz_shapes

    path = Path(path)
    check_input_file(path, "inputs file")
    try:
        _npz_shapes(path)
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: np.asarray(data[key]) for key in data.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise UsageError(f"inputs file {path} is not a readable .npz of arrays ({type(exc).__name__})") from None
    expected = [f"arg{i}" for i in range(len(arrays))]
    if not arrays:
        raise UsageError(f"inputs file {path} holds no arrays; save the arguments as arg0, arg1, ... (numpy.savez)")
    if sorted(arrays) != sorted(expected):
        found = ", ".join(sorted(arrays)[:6])
        raise UsageError(
            f"inputs file {path} holds {found}; it must hold the positional arguments as {', '.join(expected)} "
            "(numpy.savez(path, arg0=..., arg1=...))"
        )
    for key in expected:
        if arrays[key].dtype.kind not in "biuf":
            raise UsageError(f"inputs file {path}: {key} has dtype {arrays[key].dtype}; arguments are numeric arrays")
    return [arrays[key] for key in expected]
