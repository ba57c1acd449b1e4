"""A Ctrl-C that lands inside an ``import`` is delivered once the import is over.

Raising KeyboardInterrupt in the middle of importing JAX left the process half-initialised
(SIGSEGV, SIGABRT, or a module missing attributes). The module imported here sends itself
SIGINT half-way through its own body; the import must finish, and the interrupt still arrive.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import sys, time
from hwbench.core import interrupts
interrupts.install()
sys.path.insert(0, sys.argv[1])
try:
    import slow_module
    print("imported", slow_module.COMPLETE, flush=True)
    time.sleep(5)
    print("interrupt lost", flush=True)
except KeyboardInterrupt:
    print("interrupted after the import:", "slow_module" in sys.modules and sys.modules["slow_module"].COMPLETE)
"""

SLOW_MODULE = """
import os, signal, time
os.kill(os.getpid(), signal.SIGINT)
for _ in range(20):  # Python code running inside the import: where the handler would have raised
    time.sleep(0.01)
COMPLETE = True
"""


def test_an_interrupt_during_an_import_waits_for_the_import(tmp_path: Path) -> None:
    (tmp_path / "slow_module.py").write_text(SLOW_MODULE)
    proc = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines() == ["imported True", "interrupted after the import: True"], proc.stderr
