"""Fixtures for the bad-input tests: a folder of hostile files, and the CLI run in-process.

``arena`` is a folder (the tests' working directory) holding what a careless or unlucky user
points hwbench at: a FIFO, a folder where a file is expected, a file where a folder is expected,
an existing result that must not be clobbered, workload files that are damaged, truncated, claim
10^12 cells, hold NaN states or dt = 0, profile files that are malformed or name another device,
and an output folder whose lock another process holds. Tests snapshot it before and after each
refused invocation (``hwbench.testing.badinput.snapshot``) to prove nothing changed.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import sqlite3
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hwbench.core import plugins as host
from hwbench.core.kernel import WORKLOAD_FORMAT, Workload
from hwbench.testing.bad_models import write_bad_models

HWBENCH_ENV = ("HWBENCH_LOAD_PLUGINS", "HWBENCH_DISABLE_PLUGINS", "HWBENCH_STRICT_PLUGINS", "HWBENCH_DEBUG")


def _npy_header_only(shape: tuple[int, ...]) -> bytes:
    """A ``.npy`` member that claims ``shape`` float64 but carries no data (a hostile header)."""
    fh = io.BytesIO()
    np.lib.format.write_array_header_2_0(fh, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return fh.getvalue()


def _bad_workloads(folder: Path, good: Workload, leaky: Workload) -> None:
    good.save(folder / "w64.npz")
    leaky.save(folder / "leaky.npz")
    whole = (folder / "w64.npz").read_bytes()
    (folder / "truncated.npz").write_bytes(whole[: len(whole) // 2])
    (folder / "garbage.npz").write_bytes(bytes(range(256)) * 4)
    (folder / "empty.npz").write_bytes(b"")
    (folder / "text.npz").write_text("not a workload\n")
    nan = Workload(good.kernel, good.size, good.meta, good.params, good.arrays, good.state0.copy(), good.annotations)
    nan.state0[0, 3] = np.nan
    nan.save(folder / "nan_state.npz")
    Workload(good.kernel, good.size, good.meta, {**good.params, "dt": 0.0}, good.arrays, good.state0).save(
        folder / "dt0.npz"
    )
    Workload(good.kernel, 10**12, good.meta, good.params, good.arrays, good.state0).save(folder / "claims_1e12.npz")
    Workload(good.kernel, -5, good.meta, good.params, good.arrays, good.state0).save(folder / "negative_size.npz")
    with zipfile.ZipFile(folder / "huge_arrays.npz", "w") as z:  # headers claim 14 x 10^12 float64
        header = {"format": WORKLOAD_FORMAT, "kernel": "io-ehh", "size": 10**12, "meta": {}, "scalars": {}}
        buf = io.BytesIO()
        np.save(buf, np.frombuffer(json.dumps({**header, "state_is_sequence": False}).encode(), np.uint8))
        z.writestr("__header__.npy", buf.getvalue())
        z.writestr("state__0.npy", _npy_header_only((14, 10**12)))
    with zipfile.ZipFile(folder / "old_format.npz", "w") as z:
        buf = io.BytesIO()
        np.save(buf, np.frombuffer(json.dumps({"format": "hwbench-workload/0"}).encode(), np.uint8))
        z.writestr("__header__.npy", buf.getvalue())


def _profiles(folder: Path, registry: host.Registry) -> None:
    registry.device("groq").numerics("default").save(folder / "groq.toml")
    (folder / "bad.toml").write_text("name = 'x'\n[ops.exp]\nformat = 'fp99'\n")
    (folder / "noext").write_text("name = 'x'\n")
    (folder / "profile.yaml").write_text("name: x\n")


USER_FUNCTIONS = """import jax.numpy as jnp

CONSTANT = 3


def model(x, w):
    return jnp.tanh(x @ w)


def branchy(x, w):
    if x.sum() > 0:
        return x
    return w


def spectrum(x, w):
    return jnp.fft.fft(x).real
"""


def _functions(folder: Path) -> None:
    """A user's module of JAX functions (``--function userfns:NAME``) and argument files, good and bad."""
    (folder / "userfns.py").write_text(USER_FUNCTIONS)
    x, w = np.ones((2, 4), np.float32), np.ones((4, 3), np.float32)
    np.savez(folder / "fargs.npz", arg0=x, arg1=w)
    np.savez(folder / "fargs_one.npz", arg0=x)
    np.savez(folder / "fargs_shapes.npz", arg0=x, arg1=np.ones((5, 3), np.float32))
    np.savez(folder / "fargs_keys.npz", x=x, w=w)
    np.savez(folder / "fargs_strings.npz", arg0=np.array(["a", "b"]), arg1=w)
    np.savez(folder / "fargs_empty.npz")
    np.savez(folder / "fargs_pickle.npz", arg0=np.array([{"a": 1}], dtype=object), arg1=w)
    with zipfile.ZipFile(folder / "fargs_huge.npz", "w") as z:  # a header claiming 10^13 float64
        z.writestr("arg0.npy", _npy_header_only((10**13,)))


def _stores(folder: Path) -> None:
    """Results stores beside the arena (``../arena-stores``: SQLite's -wal/-shm files come and go) and
    exports edited by hand in it: a file that is no database, a store of a newer schema, a good empty
    one; a truncated export, one with a wrong type, one whose document is not a hwbench result."""
    stores = folder.parent / "arena-stores"
    if not stores.exists():  # one set for every arena of the session (the bad-input modules share it)
        _make_stores(stores)
    head = '{"schema": "hwbench.store-export/1", "records": ['
    (folder / "export-truncated.json").write_text(head + '{"id": 1, "uid": "a')
    (folder / "export-wrong-type.json").write_text(head + '{"id": "one", "uid": "a", "kind": "run", "created": ""}]}')
    record = {"id": 1, "uid": "b" * 32, "kind": "run", "created": "2026-01-01", "environment": {"captured": False}}
    foreign = {"schema": "hwbench.store-export/1", "records": [{**record, "document": {"schema": 5}}]}
    (folder / "export-foreign.json").write_text(json.dumps(foreign))
    no_doc = {"schema": "hwbench.store-export/1", "records": [record]}
    (folder / "export-no-doc.json").write_text(json.dumps(no_doc))
    run = {**record, "document": {"schema": "hwbench.run/1", "timing": {"run_s": int("9" * 400)}}}  # issue 43's cases
    (folder / "export-400-digits.json").write_text(json.dumps({**no_doc, "records": [run]}))
    twice = {**record, "uid": "d" * 32, "document": {"schema": "hwbench.run/1"}}
    (folder / "export-duplicate.json").write_text(json.dumps({**no_doc, "records": [twice, twice]}))
    (folder / "export-future.json").write_text(json.dumps({**no_doc, "schema": "hwbench.store-export/2"}))
    (folder / "result-400-digits.json").write_text(json.dumps(run["document"]))
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (folder / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000)
    (folder / "spec-seed-neg.toml").write_text("seeds = [-1]\n")


def _make_stores(stores: Path) -> None:
    from hwbench.store import db
    from hwbench.store.location import StoreLocation

    stores.mkdir()
    (stores / "notdb.sqlite").write_text("a text file, not a database\n")
    for name in ("store.sqlite", "newer.sqlite"):
        location = StoreLocation(f"sqlite:///{stores / name}", explicit=True)
        db.Store(location).engine.dispose()
        del db._ENGINES[location.url]  # the test opens it afresh
    with sqlite3.connect(stores / "newer.sqlite") as conn:
        conn.execute("UPDATE hwbench_store_version SET version = 99")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Quote the bad-input corpus's counts when it ran."""
    corpus = sys.modules.get("test_bad_input_corpus") or sys.modules.get("tests.cli.test_bad_input_corpus")
    if corpus is not None and corpus.TALLY["invocations"]:
        terminalreporter.write_line(corpus.summary())


@pytest.fixture(scope="module")
def registry() -> Iterator[host.Registry]:
    """One registry for the module (built-ins only), installed as the process-wide one."""
    saved = host._cached
    host._cached = host.load_registry(entry_point_plugins=False, env={})
    yield host._cached
    host._cached = saved


def _model_inputs(folder: Path) -> None:
    """A model's inputs gone wrong (issue 40, inputs): a good model (the MLP of tests/data/models, input
    ``x`` float32 [8, 16]) and one with a symbolic batch, inputs files with a missing, an extra, a
    float64 and a misshapen array, labels that are no class indices, and precision maps that are not."""
    import shutil

    from onnx import TensorProto, helper, save

    data = Path(__file__).resolve().parents[1] / "data" / "models"
    shutil.copy(data / "mlp.onnx", folder / "m.onnx")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "sym", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "sym.onnx"))
    good = np.zeros((8, 16), np.float32)
    np.savez(folder / "in_names.npz", z=good)
    np.savez(folder / "in_extra.npz", x=good, z=good)
    np.savez(folder / "in_f64.npz", x=good.astype(np.float64))
    np.savez(folder / "in_shape.npz", x=np.zeros((8, 8), np.float32))
    np.save(folder / "labels_float.npy", np.zeros(8))
    (folder / "labels_text.npy").write_text("0 1 2\n")
    (folder / "kw_text.json").write_text("keep these wider\n")
    (folder / "kw_empty.json").write_text("{}\n")
    (folder / "kw_unknown.json").write_text('{"keep_wider": ["no such node"]}\n')


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory, registry: host.Registry) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("arena")
    kernel = registry.kernel("io-ehh")
    _bad_workloads(folder, kernel.make_workload(64, seed=0), registry.kernel("leaky-ring").make_workload(10))
    _profiles(folder, registry)
    _functions(folder)
    os.mkfifo(folder / "fifo")
    (folder / "dir").mkdir()
    (folder / "afile").write_text("a file, not a folder\n")
    (folder / "existing.json").write_text('{"an": "earlier result that must survive"}\n')
    (folder / "locked").mkdir()
    _stores(folder)
    # --- ONNX models (the evaluator's loader): hostile files under models/, a secret beside them
    write_bad_models(folder / "models")
    # --- end of ONNX models
    _model_inputs(folder)
    lock = os.open(folder / "locked" / ".hwbench.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "another hwbench" writing this folder
    try:
        yield folder
    finally:
        os.close(lock)


@pytest.fixture
def in_arena(arena: Path, registry: host.Registry, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in the arena with no HWBENCH_* settings inherited and the module's registry."""
    for key in HWBENCH_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(arena)
    host._cached = registry
    return arena
