"""The hand-written C loop of the io-ehh step (``io_ehh_step.c``), compiled and loaded with ctypes.

Imported as a sibling module by ``benchmarks/io_engines.py`` (and by its test). Compiled with
``-O3 -march=native`` by the C compiler found (``$CC``, else ``cc`` or ``gcc``) into hwbench's cache
folder, keyed by the source, the flags and the compiler's version; :func:`unavailable` says why not
where there is none. :class:`CLoop` runs a workload as hwbench's engines do (probes every sample
window, spikes, the final state), so the benchmark times the same work.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SOURCE = Path(__file__).with_name("io_ehh_step.c")
# -O3 -march=native, and: fused multiply-adds (GCC's default in GNU C, off under -std=c11),
# -fno-trapping-math (no change to any value: lets GCC vectorise the conditionals; 1.15x measured),
# -funroll-loops (1.05x measured)
FLAGS = (
    *("-O3", "-march=native", "-ffp-contract=fast", "-fno-trapping-math", "-funroll-loops"),
    *("-fPIC", "-shared", "-std=c11"),
)
PARAM_FIELDS = (
    *("g_ls", "g_la", "g_ld", "g_int_p1", "g_int_1mp2", "g_int_p2", "g_int_1mp1"),
    *("g_CaL", "g_Na_s", "g_Kdr_s", "g_K_s", "g_Na_a", "g_K_a", "g_CaH", "g_K_Ca", "g_h", "g_gj"),
    *("V_Na", "V_K", "V_Ca", "V_h", "V_l", "S", "dt"),
)


class Params(ctypes.Structure):
    _fields_ = [(name, ctypes.c_float) for name in PARAM_FIELDS]


def compiler() -> str | None:
    """The C compiler to use: ``$CC``, else ``cc``, else ``gcc`` (None: none here)."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return name
    return None


def unavailable() -> str | None:
    """Why the C contender cannot run here (None: it can)."""
    if compiler() is None:
        return "no C compiler found ($CC, cc, gcc)"
    try:
        library()
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"compiling {SOURCE.name} failed: {exc}"
    return None


_LIBRARY: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The compiled C loop (compiled once per source, flags and compiler version)."""
    global _LIBRARY
    if _LIBRARY is not None:
        return _LIBRARY
    from hwbench.core.disk_cache import cache_root

    cc = compiler()
    if cc is None:
        raise OSError("no C compiler found ($CC, cc, gcc)")
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256("\0".join([SOURCE.read_text(), *FLAGS, version]).encode()).hexdigest()[:16]
    target = cache_root() / "c-limit" / f"io_ehh_step-{key}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        subprocess.run([cc, *FLAGS, str(SOURCE), "-o", str(partial)], capture_output=True, text=True, check=True)
        partial.replace(target)
    lib = ctypes.CDLL(str(target))
    lib.io_ehh_run.restype = None
    lib.fma_peak_kernel.restype = ctypes.c_float
    lib.fma_peak_kernel.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_float)]
    lib.copy_kernel.restype = None
    _LIBRARY = lib
    return lib


def _pointer(array: np.ndarray, ctype: Any) -> Any:
    return array.ctypes.data_as(ctypes.POINTER(ctype))


def scalar_params(workload: Any) -> Params:
    """The workload's parameters as the C loop takes them; the ratios computed in double, as hwbench does."""
    p = workload.params
    arrays = sorted(k for k, v in p.items() if np.ndim(v) > 0)
    if arrays:
        raise ValueError(f"the C loop takes scalar parameters only; per-cell: {', '.join(arrays)}")
    derived = {
        "g_int_p1": p["g_int"] / p["p1"],
        "g_int_1mp2": p["g_int"] / (1 - p["p2"]),
        "g_int_p2": p["g_int"] / p["p2"],
        "g_int_1mp1": p["g_int"] / (1 - p["p1"]),
    }
    return Params(*(float(derived.get(name, p.get(name, 0.0))) for name in PARAM_FIELDS))


@dataclass
class COutput:
    state: np.ndarray
    probes: np.ndarray
    spikes: np.ndarray


class CLoop:
    """One io-ehh workload on the C loop, float32 (``run`` as an engine's executor runs)."""

    def __init__(self, workload: Any, sample_every: int) -> None:
        from hwbench.core.layout import check_index, pass_plan

        start = time.perf_counter()
        self.lib = library()
        self.size, self.sample_every = workload.size, sample_every
        self.params = scalar_params(workload)
        src, tgt = workload.arrays.get("src"), workload.arrays.get("tgt")
        self.counts = np.zeros(0, dtype=np.int32)
        self.src = np.zeros(0, dtype=np.int32)
        if src is not None and len(src):
            plan = pass_plan(tgt, workload.size)
            if not (plan.is_pass_major and plan.in_rank_order):
                raise ValueError("the C loop takes pass-major junction lists with targets numbered by rank")
            check_index(np.asarray(src), workload.size)  # the C loop reads V_dend[src] unchecked
            self.counts = np.asarray(plan.counts, dtype=np.int32)
            self.src = np.ascontiguousarray(src, dtype=np.int32)
        self.setup_s = time.perf_counter() - start

    def run(self, state: Any, inputs: dict[str, Any], nsamples: int) -> COutput:
        n = self.size
        cur = np.array(state, dtype=np.float32, order="C", copy=True)
        spare = np.empty_like(cur)
        i_app = np.ascontiguousarray(inputs["I_app"], dtype=np.float32)
        gj = np.zeros(2 * n, dtype=np.float32)  # the junction currents, and the gathered voltages
        probes = np.empty((nsamples, n), dtype=np.float32)
        spikes = np.empty((nsamples, n), dtype=np.int32)
        f, i32 = ctypes.c_float, ctypes.c_int32
        self.lib.io_ehh_run(
            ctypes.c_int(n), ctypes.c_int(nsamples), ctypes.c_int(self.sample_every),
            _pointer(cur, f), _pointer(spare, f), _pointer(i_app, f),
            ctypes.c_int(len(self.counts)), _pointer(self.counts, i32), _pointer(self.src, i32),
            ctypes.byref(self.params), _pointer(gj, f), _pointer(probes, f), _pointer(spikes, i32),
        )  # fmt: skip
        return COutput(state=cur, probes=probes, spikes=spikes.astype(np.int16))


def _best_cpu_seconds(call: Any, reps: int, seconds: float, repeat: int) -> tuple[int, float]:
    """``call(reps)`` calibrated (reps doubled) to about ``seconds`` of CPU time, then the best of
    ``repeat`` timed calls; returns (reps, best CPU seconds). CPU time is the core's rate while this
    process runs on it: time that other processes take from a shared machine is not counted."""
    while True:
        start = time.process_time()
        call(reps)
        if time.process_time() - start > seconds / 4:
            break
        reps *= 2
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        call(reps)
        best = min(best, time.process_time() - start)
    return reps, best


def copy_bandwidth(nbytes: int, seconds: float = 0.05, repeat: int = 5) -> float:
    """Bytes per second of copies moving ``nbytes`` (half read, half written), in CPU time."""
    n = max(16, nbytes // 8)
    src, dst = np.ones(n, dtype=np.float32), np.empty(n, dtype=np.float32)
    lib, f = library(), ctypes.c_float

    def call(reps: int) -> None:
        lib.copy_kernel(ctypes.c_long(reps), ctypes.c_int(n), _pointer(src, f), _pointer(dst, f))

    reps, best = _best_cpu_seconds(call, 16, seconds, repeat)
    return reps * 8 * n / best


def fma_peak_flops(seconds: float = 0.2, repeat: int = 7) -> float:
    """This core's fp32 peak, measured: FLOP/s of independent fused multiply-adds (2 FLOPs each), in CPU time."""
    lib, sink = library(), ctypes.c_float()
    reps, best = _best_cpu_seconds(lambda reps: lib.fma_peak_kernel(reps, ctypes.byref(sink)), 1 << 16, seconds, repeat)
    return reps * 12 * 16 * 2 / best
