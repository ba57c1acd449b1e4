"""Coverage checked against a suite nobody here wrote: ONNX's own backend test data, as installed.

The onnx package ships ``backend/test/data``: ``pytorch-converted`` (PyTorch layers) and
``pytorch-operator`` (PyTorch operators), each a model with its inputs and expected outputs;
``light`` (nine CNN architectures with constant weights); ``real/*/data.json`` (their tolerance).
On the cpu device (fp32, fp64 for the double-precision models) at least 95 % of the float tests
must equal their expected outputs as ONNX's own runner checks them (shape, dtype, ``assert_allclose``
at the ``real/`` tolerance); ONNX Runtime's count is measured beside it. Wherever both run, the
evaluator equals ONNX Runtime within ``ULPS`` units in the last place of each output's largest
magnitude (sums in another order differ by a few of those; element by element, a cancelling sum
can differ by thousands of its own ulps). The nine light models must run and equal ONNX Runtime.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import numpy_helper  # noqa: E402

from hwbench.core.plugins import get_registry  # noqa: E402
from hwbench.evaluator.onnx.evaluate import compile_graph  # noqa: E402
from hwbench.evaluator.onnx.graph import OnnxGraph  # noqa: E402
from hwbench.plugins.devices.arithmetic import device_arith  # noqa: E402

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
SUITES = ("pytorch-converted", "pytorch-operator")
ULPS = 8
"""Evaluator vs ONNX Runtime: ulps of the output's largest magnitude (measured: at most 4)."""
PASS_RATE = 0.95

if not (DATA / "pytorch-converted").is_dir():  # pragma: no cover - an onnx build without its test data
    pytest.skip("the installed onnx package has no backend test data", allow_module_level=True)


def tolerance(model: str | None = None) -> tuple[float, float]:
    """(rtol, atol) of a light model from its ``real/`` data.json; for the operator suites the
    tightest of them (rtol 1e-3, atol 1e-7)."""
    files = [DATA / "real" / f"test_{model}" / "data.json"] if model else sorted(DATA.glob("real/*/data.json"))
    found = [json.loads(p.read_text()) for p in files]
    return min(float(f["rtol"]) for f in found), min(float(f["atol"]) for f in found)


def _tensor(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def float_tests() -> Iterator[tuple[str, object, dict[str, np.ndarray], list[np.ndarray]]]:
    """(name, model, feeds, expected) of every test whose inputs and outputs are all floats."""
    for suite in SUITES:
        for folder in sorted((DATA / suite).iterdir()):
            sets = folder / "test_data_set_0"
            inputs = [_tensor(p) for p in sorted(sets.glob("input_*.pb"))]
            outputs = [_tensor(p) for p in sorted(sets.glob("output_*.pb"))]
            if not all(a.dtype.kind == "f" for a in inputs + outputs):
                continue
            model = onnx.load(str(folder / "model.onnx"))
            inits = {i.name for i in model.graph.initializer}
            names = [i.name for i in model.graph.input if i.name not in inits]
            yield f"{suite}/{folder.name}", model, dict(zip(names, inputs)), outputs


def similar(got: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol: float) -> bool:
    """ONNX's backend runner's check: same count, shapes, dtypes, then ``assert_allclose``."""
    if len(got) != len(expected):
        return False
    for a, b in zip(got, expected):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        try:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        except AssertionError:
            return False
    return True


def normwise_ulps(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| in units in the last place of max |b| (finite elements; infinities must agree)."""
    finite = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return float("inf")
    top = np.max(np.abs(b[finite]), initial=0.0)
    if top == 0:
        return 0.0 if np.array_equal(a, b) else float("inf")
    return float(np.max(np.abs(a[finite].astype(np.float64) - b[finite])) / np.spacing(top.astype(b.dtype)))


def run_evaluator(model: object, feeds: dict[str, np.ndarray], double: bool) -> list[np.ndarray]:
    """The cpu device: fp32, or fp64 for a model of doubles (a CPU computes a double in double)."""
    graph = OnnxGraph(model)
    arith = device_arith(get_registry(), "cpu", "fp64" if double else "fp32")
    outs = compile_graph(graph, arith)(feeds).outputs
    return [outs[name] for name in graph.outputs]


def run_ort(model: object, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """ONNX Runtime's CPU provider, or None where it does not run the model (old opset forms)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return list(session.run(None, feeds))
    except Exception:  # ORT's refusal of an opset-6 form is the measurement, not an error
        return None


def test_conformance_suites_pass_on_the_cpu_device(record_property: pytest.RecordProperty) -> None:
    rtol, atol = tolerance()
    ours, theirs, worst, failures = 0, 0, 0.0, []
    tests = list(float_tests())
    for name, model, feeds, expected in tests:
        double = any(a.dtype == np.float64 for a in [*feeds.values(), *expected])
        got = run_evaluator(model, feeds, double)
        passed = similar(got, expected, rtol, atol)
        ours += passed
        if not passed:
            failures.append(name)
        reference = run_ort(model, feeds)
        if reference is None:
            continue
        theirs += similar(reference, expected, rtol, atol)
        for a, b in zip(got, reference):
            worst = max(worst, normwise_ulps(a, b))
            assert normwise_ulps(a, b) <= ULPS, (name, normwise_ulps(a, b))
    summary = f"ONNX backend tests (float, {', '.join(SUITES)}): evaluator {ours}/{len(tests)}, ONNX Runtime {theirs}"
    print(f"\n{summary}; evaluator vs ONNX Runtime at most {worst:g} ulps of the largest output")
    record_property("conformance", summary)
    assert len(tests) >= 100
    assert ours >= PASS_RATE * len(tests), failures


LIGHT = sorted(p.stem.removeprefix("light_") for p in (DATA / "light").glob("light_*.onnx"))


def standard_input(shape: tuple[int, ...]) -> np.ndarray:
    """The input ONNX's backend runner gives a light model (``generate_dummy_data``: arange / n)."""
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


@pytest.mark.parametrize("name", LIGHT)
def test_light_models_equal_onnx_runtime_and_the_shipped_output(name: str) -> None:
    """Each light CNN on the cpu device equals ONNX Runtime on the runner's input within the real/
    tolerance, and equals the output that onnx ships for that input."""
    rtol, atol = tolerance(name)
    model = onnx.load(str(DATA / "light" / f"light_{name}.onnx"))
    graph = OnnxGraph(model)
    feeds = {k: standard_input(tuple(int(d) for d in spec.shape)) for k, spec in graph.inputs.items()}
    got = run_evaluator(model, feeds, double=False)
    reference = run_ort(model, feeds)
    assert reference is not None
    for a, b in zip(got, reference):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    shipped = [_tensor(DATA / "light" / f"light_{name}_output_{i}.pb") for i in range(len(got))]
    assert similar(got, shipped, rtol, atol)


def test_all_nine_light_models_are_collected() -> None:
    assert len(LIGHT) == 9, LIGHT
