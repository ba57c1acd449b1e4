"""hwbench's NeuroBench metrics equal neurobench 2.3.0's own numbers on the same LIF networks.

The numbers in tests/data/neurobench_metrics.json were made by scripts/make_neurobench_vectors.py,
which ran neurobench's ``Benchmark`` on snnTorch twins of these hwbench workloads (same weights and
Poisson input), each in float32 and in float64. Here the registered metrics compute them from the
kernels' own reports at the case's dtype.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hwbench.core.metric import evaluate
from hwbench.core.plugins import load_registry

VECTORS = json.loads((Path(__file__).parent.parent / "data" / "neurobench_metrics.json").read_text())
CASES = VECTORS["cases"]


@pytest.fixture(scope="module")
def registry():
    return load_registry(env={})


def _case_id(case: dict) -> str:
    overrides = "-".join(f"{k}={v}" for k, v in case["overrides"].items())
    return f"{case['kernel']}-{case['size']}-{overrides}-{case['dtype']}"


@pytest.fixture(scope="module", params=CASES, ids=_case_id)
def computed(request: pytest.FixtureRequest, registry) -> tuple[dict, dict]:
    case = request.param
    kernel = registry.kernel(case["kernel"])
    workload = kernel.make_workload(case["size"], seed=case["seed"], **case["overrides"])
    weights = sum(np.float32(v).astype(np.float64).sum() for k, v in workload.arrays.items() if k != "x")
    assert weights == pytest.approx(case["weights_sum"], rel=1e-12), "the workload is not the one frozen"
    assert int(workload.arrays["x"].sum()) == case["input_spikes"]
    steps = int(workload.params["n_steps"])
    found = evaluate(
        registry.metrics.values(),
        ("static", "workload"),
        kernel,
        workload=workload,
        timing=None,
        activity=kernel.activity(workload, steps),
        structure=kernel.structure(workload, dtype=case["dtype"]),
        energy=None,
    )
    assert not found.errors
    return case["neurobench"], found.values


def test_static_metrics_equal_neurobench(computed: tuple[dict, dict]) -> None:
    nb, hw = computed
    assert hw["footprint"]["bytes"] == nb["footprint"]
    assert hw["parameter-count"]["count"] == nb["parameter_count"]
    assert round(hw["connection-sparsity"]["sparsity"], 4) == nb["connection_sparsity"]  # neurobench rounds


def test_workload_metrics_equal_neurobench(computed: tuple[dict, dict]) -> None:
    nb, hw = computed
    assert hw["activation-sparsity"]["sparsity"] == pytest.approx(nb["activation_sparsity"], rel=1e-15)
    assert hw["membrane-updates"]["updates"] == nb["membrane_updates"]
    ops = nb["synaptic_operations"]
    assert hw["synaptic-operations"] == {
        "effective_macs": ops["Effective_MACs"],
        "effective_acs": ops["Effective_ACs"],
        "dense": ops["Dense"],
    }


def test_neuron_operations_equal_neurobench_or_are_undefined_like_it(computed: tuple[dict, dict]) -> None:
    nb, hw = computed
    if nb["neuron_operations"] is None:  # neurobench 2.3.0 has no op count for RLeaky
        assert "neuron-operations" not in hw
        return
    assert hw["neuron-operations"] == {
        "effective": nb["neuron_operations"]["Effective Neuron Ops"],
        "dense": nb["neuron_operations"]["Neuron Dense Ops"],
    }


def test_vectors_came_from_neurobench_2_3_0() -> None:
    assert VECTORS["versions"]["neurobench"] == "2.3.0"


def test_both_dtypes_are_frozen_for_every_network() -> None:
    networks = {
        dtype: [(c["kernel"], c["size"], c["seed"]) for c in CASES if c["dtype"] == dtype]
        for dtype in ("float32", "float64")
    }
    assert networks["float32"] and networks["float32"] == networks["float64"]
