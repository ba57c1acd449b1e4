"""Freeze NeuroBench 2.3.0's metrics of hwbench's LIF networks into tests/data/neurobench_metrics.json.

hwbench's NeuroBench metrics (hwbench/plugins/metrics_neurobench.py) must equal neurobench's own on
the same network, weights and input. neurobench needs PyTorch and snnTorch, which hwbench does not
depend on, so this script runs them once in a scratch environment and writes the numbers down;
tests/metrics/test_neurobench_vectors.py then checks hwbench against them without PyTorch.

For each case below the hwbench workload is built from its seed (so the weights and the Poisson
input are hwbench's own), copied into an snnTorch network of the matching neuron model
(``lif`` -> ``snn.Leaky``, ``lif-current`` -> ``snn.Synaptic``, ``lif-recurrent`` -> ``snn.RLeaky``
as snnTorch builds it: its recurrent layer is an ``nn.Linear`` with a bias, set to zero since
hwbench's recurrence has none, and counted by NeuroBench's parameter count and footprint), and
neurobench's ``Benchmark`` is run on one sample (batch 1, ``n_steps`` time steps). Every case is
frozen twice: with the network in float32 (PyTorch's default) and in float64, built under
``torch.set_default_dtype(torch.float64)`` so that snnTorch's buffers (``threshold``, ``beta``,
``graded_spikes_factor``, ...), which it creates in the default dtype, are float64 too, as a
float64 snnTorch model's are (``model.double()`` gives the same).

Not every hwbench variant has an snnTorch twin: snnTorch's ``Synaptic`` and ``RLeaky`` apply the
"zero" reset after the leak (``(1 - reset) (beta u + drive)``) where hwbench zeroes the potential
before it (``beta (1 - z) u + drive``, as ``snn.Leaky`` does), so only ``subtract`` is frozen for
those two.

Run (about a minute)::

    python3 -m venv /tmp/neurobench
    /tmp/neurobench/bin/pip install torch neurobench==2.3.0 snntorch numpy pydantic pluggy
    PYTHONPATH=. /tmp/neurobench/bin/python scripts/make_neurobench_vectors.py
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import numpy as np
import snntorch as snn
import torch
from neurobench.benchmarks import Benchmark
from neurobench.models import SNNTorchModel
from torch import nn

from hwbench.plugins.kernels.lif import kernels

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "neurobench_metrics.json"
CASES = [  # (kernel, size, seed, overrides)
    ("lif", 100, 0, {"reset": "subtract"}),
    ("lif", 100, 1, {"reset": "zero"}),
    ("lif", 64, 2, {"reset": "subtract", "weight_gain": 1.0}),
    ("lif-current", 100, 0, {"reset": "subtract"}),
    ("lif-recurrent", 80, 0, {"reset": "subtract"}),
]
DTYPES = {"float32": torch.float32, "float64": torch.float64}
STATIC = ["footprint", "connection_sparsity", "parameter_count"]
WORKLOAD = ["activation_sparsity", "membrane_updates", "synaptic_operations", "neuron_operations"]


class CastLinear(nn.Linear):
    """``nn.Linear`` that takes its input in its own dtype: snnTorch 1.0 emits spikes as float32
    (``(x > 0).float()``), which a float64 layer refuses; RLeaky's recurrent layer is swapped for
    this one (same weight and bias) so the float64 network runs. NeuroBench counts it as a Linear."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.to(self.weight.dtype))


class Net(nn.Module):
    """784-n-10: Linear (no bias) -> spiking layer -> Linear (no bias) -> spiking layer."""

    def __init__(self, kernel: str, workload, dtype: torch.dtype) -> None:
        super().__init__()
        a, p = workload.arrays, workload.params
        n, n_out = workload.size, a["w_out"].shape[1]
        reset = "zero" if p["reset_zero"] == 1.0 else "subtract"
        self.fc1 = nn.Linear(a["w_in"].shape[0], n, bias=False)
        self.fc2 = nn.Linear(n, n_out, bias=False)
        common = {"beta": p["beta"], "threshold": p["thr"], "reset_mechanism": reset}
        if kernel == "lif-current":
            self.lif1 = snn.Synaptic(alpha=p["alpha"], **common)
            self.lif2 = snn.Synaptic(alpha=p["alpha"], **common)
        elif kernel == "lif-recurrent":
            self.lif1 = snn.RLeaky(linear_features=n, all_to_all=True, **common)
            self.lif1.recurrent = CastLinear(n, n)  # what RLeaky builds: nn.Linear(n, n), with a bias
            self.lif1.recurrent.weight.data = torch.tensor(a["w_rec"].T, dtype=dtype)
            self.lif1.recurrent.bias.data = torch.zeros(n, dtype=dtype)  # hwbench's recurrence has no bias
            self.lif2 = snn.Leaky(**common)
        else:
            self.lif1 = snn.Leaky(**common)
            self.lif2 = snn.Leaky(**common)
        self.fc1.weight.data = torch.tensor(a["w_in"].T, dtype=dtype)
        self.fc2.weight.data = torch.tensor(a["w_out"].T, dtype=dtype)

    def reset(self) -> None:
        for layer in (self.lif1, self.lif2):
            layer.reset_mem()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out1 = self.lif1(self.fc1(x))
        out2 = self.lif2(self.fc2(out1[0].to(self.fc2.weight.dtype)))  # snnTorch spikes are float32
        return out2[0], out2[-1]


def run_case(kernel_name: str, size: int, seed: int, overrides: dict, dtype: str) -> dict:
    kernel = {k.name: k for k in kernels()}[kernel_name]
    workload = kernel.make_workload(size, seed=seed, **overrides)
    torch.set_default_dtype(DTYPES[dtype])  # snnTorch makes its buffers and states in the default dtype
    try:
        return _measure(kernel_name, size, seed, overrides, dtype, workload)
    finally:
        torch.set_default_dtype(torch.float32)


def _measure(kernel_name: str, size: int, seed: int, overrides: dict, dtype: str, workload) -> dict:
    net = Net(kernel_name, workload, DTYPES[dtype])
    model = SNNTorchModel(net)
    x = torch.tensor(workload.arrays["x"], dtype=DTYPES[dtype]).unsqueeze(0)  # (batch 1, steps, 784)
    labels = torch.zeros(1, dtype=torch.long)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, labels), batch_size=1)
    workload_metrics = [m for m in WORKLOAD if not (m == "neuron_operations" and kernel_name == "lif-recurrent")]
    bench = Benchmark(model, loader, [], [], [STATIC, workload_metrics])
    results = bench.run(quiet=True)
    if kernel_name == "lif-recurrent":  # neurobench 2.3.0 has no op count for RLeaky (KeyError 'RLeaky')
        results["neuron_operations"] = None
    return {
        "kernel": kernel_name,
        "size": size,
        "seed": seed,
        "overrides": overrides,
        "dtype": dtype,
        "weights_sum": _weights_sum(workload),
        "input_spikes": int(workload.arrays["x"].sum()),
        "neurobench": {k: _plain(v) for k, v in results.items()},
    }


def _weights_sum(workload) -> float:
    """A fingerprint of the float32 weights, so the test knows it rebuilt the same network."""
    return float(sum(np.float32(v).astype(np.float64).sum() for k, v in workload.arrays.items() if k != "x"))


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value.item()
    return value


def main() -> None:
    torch.manual_seed(0)
    cases = [run_case(*case, dtype) for dtype in DTYPES for case in CASES]
    payload = {
        "source": "neurobench.metrics (Benchmark.run) on snnTorch twins of hwbench workloads",
        "versions": {name: version(name) for name in ("neurobench", "snntorch", "torch")},
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {OUT}")
    for case in cases:
        print(case["kernel"], case["dtype"], case["size"], case["overrides"], case["neurobench"])


if __name__ == "__main__":
    main()
