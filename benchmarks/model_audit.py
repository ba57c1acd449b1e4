"""The op-level evaluator on users' models, side by side with ONNX Runtime, and how cost grows with batch.

Models: ONNX's nine light CNNs, shipped with the onnx package (``onnx/backend/test/data/light``).
Contenders, each a callable from the model's inputs to its outputs, built once (the first call
compiles: reported as ``first``), then timed in turns in this one process (round-robin, minimum of
``--repeat`` turns, so a change of machine load hits all alike):

* ``onnxruntime``: ONNX Runtime's CPU provider, the baseline every ratio is taken against;
* ``evaluator fp32``: the evaluator's fp32 path (the ``cpu`` device, JAX) — goal <= 1.5x;
* ``emulated <device>``: a device mode whose matrix products are the operand-rounding
  approximation (``--emulated``, default ``groq``: fp16 operands, reduced-precision vector ops,
  saturation) — goal <= 3x;
* ``block-FMA <device>``: the faithful tensor-core model (``--faithful``, default
  ``a100:tensorrt``), every product's block FMA on the host — goal <= 50x, the matrix-unit GEMM's
  bound (``benchmarks/matrix_units.py``); run on ``--faithful-models`` only (seconds per model).

Then ``--batch-model`` (default squeezenet, the light model without a fixed-batch Reshape) at each
batch size of ``--batches``: evaluator fp32 and ONNX Runtime per image.

Last, ``--full-audit`` (default light ResNet-50; ``--full-audit ''`` leaves it out): the wall and CPU
time of ``hwbench audit --model`` on ``--full-devices`` (five by default) through the CLI — goal
<= 60 s on 2 cores (:mod:`_full_audit`).

    python benchmarks/model_audit.py [--models squeezenet,resnet50] [--repeat 5] [--json]
        [--emulated groq] [--faithful a100:tensorrt] [--faithful-models squeezenet]
        [--batch-model squeezenet] [--batches 1,2,4,8] [--full-audit resnet50] [--full-devices ...]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _full_audit import FIVE_DEVICES, full_audit, print_full_audit

BOUNDS = {"evaluator fp32": 1.5, "emulated": 3.0, "block-FMA": 50.0}
BASELINE = "onnxruntime"

Runner = Callable[[dict[str, np.ndarray]], Any]


def light_folder() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def light_models() -> list[str]:
    return sorted(p.stem.removeprefix("light_") for p in light_folder().glob("light_*.onnx"))


def load(name: str, batch: int = 1) -> Any:
    """A light model, its first input's (and output's) leading dimension set to ``batch``."""
    import onnx

    model = onnx.load(str(light_folder() / f"light_{name}.onnx"))
    if batch != 1:
        inits = {i.name for i in model.graph.initializer}
        for value in [*(i for i in model.graph.input if i.name not in inits), *model.graph.output]:
            value.type.tensor_type.shape.dim[0].dim_value = batch
    return model


def inputs_of(model: Any) -> dict[str, np.ndarray]:
    from hwbench.evaluator.onnx.graph import OnnxGraph

    rng = np.random.default_rng(0)
    graph = OnnxGraph(model)
    return {k: rng.random([int(d) for d in spec.shape], dtype=np.float32) for k, spec in graph.inputs.items()}


# --- contenders ---------------------------------------------------------------------------------
def onnxruntime(model: Any) -> Runner:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda feeds: session.run(None, feeds)


def evaluator(model: Any, device: str) -> Runner:
    """The evaluator on ``device[:mode]``'s arithmetic (JAX backend)."""
    from hwbench.core.plugins import get_registry
    from hwbench.evaluator.onnx.evaluate import compile_graph
    from hwbench.evaluator.onnx.graph import OnnxGraph
    from hwbench.plugins.devices.arithmetic import device_arith

    name, _, mode = device.partition(":")
    return compile_graph(OnnxGraph(model), device_arith(get_registry(), name, mode or None))


def contenders(model: Any, name: str, args: argparse.Namespace) -> dict[str, tuple[str, Runner]]:
    """label -> (bound key, runner) for one model."""
    out: dict[str, tuple[str, Runner]] = {
        BASELINE: ("", onnxruntime(model)),
        "evaluator fp32": ("evaluator fp32", evaluator(model, "cpu:fp32")),
    }
    for device in filter(None, args.emulated.split(",")):
        out[f"emulated {device}"] = ("emulated", evaluator(model, device))
    if name in args.faithful_models.split(","):
        for device in filter(None, args.faithful.split(",")):
            out[f"block-FMA {device}"] = ("block-FMA", evaluator(model, device))
    return out


# --- timing -------------------------------------------------------------------------------------
def time_turns(runners: dict[str, Runner], feeds: dict[str, np.ndarray], repeat: int) -> dict[str, float]:
    """Minimum seconds per call of each runner, timed in turns."""
    best = dict.fromkeys(runners, float("inf"))
    for _ in range(repeat):
        for label, run in runners.items():
            start = time.perf_counter()
            run(feeds)
            best[label] = min(best[label], time.perf_counter() - start)
    return best


def measure_model(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    model = load(name)
    feeds = inputs_of(model)
    rows, runners = [], {}
    for label, (kind, run) in contenders(model, name, args).items():
        start = time.perf_counter()
        run(feeds)  # compiles
        runners[label] = run
        rows.append({"model": name, "contender": label, "kind": kind, "first_s": time.perf_counter() - start})
    best = time_turns(runners, feeds, args.repeat)
    base = best[BASELINE]
    for row in rows:
        row["run_ms"] = best[row["contender"]] * 1e3
        row["ratio"] = best[row["contender"]] / base
        row["bound"] = BOUNDS.get(row["kind"])
    return rows


def measure_batches(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for batch in (int(b) for b in args.batches.split(",")):
        model = load(args.batch_model, batch)
        feeds = inputs_of(model)
        runners = {BASELINE: onnxruntime(model), "evaluator fp32": evaluator(model, "cpu:fp32")}
        for run in runners.values():
            run(feeds)
        best = time_turns(runners, feeds, args.repeat)
        rows.append(
            {
                "model": args.batch_model,
                "batch": batch,
                "ms_per_image": {k: v * 1e3 / batch for k, v in best.items()},
                "ratio": best["evaluator fp32"] / best[BASELINE],
            }
        )
    return rows


def print_table(rows: list[dict[str, Any]], batches: list[dict[str, Any]]) -> None:
    print(f"{'model':<13} {'contender':<30} {'first s':>8} {'run ms':>9} {'x ORT':>7} {'goal':>6}")
    for r in rows:
        goal = f"<={r['bound']:g}x" if r["bound"] else ""
        mark = "" if not r["bound"] else (" ok" if r["ratio"] <= r["bound"] else " over")
        print(
            f"{r['model']:<13} {r['contender']:<30} {r['first_s']:>8.1f} {r['run_ms']:>9.1f} "
            f"{r['ratio']:>7.2f} {goal:>6}{mark}"
        )
    if batches:
        print(f"\ncost by batch size ({batches[0]['model']}): ms per image")
        print(f"{'batch':>5} {'onnxruntime':>12} {'evaluator fp32':>15} {'x ORT':>7}")
        for b in batches:
            per = b["ms_per_image"]
            print(f"{b['batch']:>5} {per[BASELINE]:>12.2f} {per['evaluator fp32']:>15.2f} {b['ratio']:>7.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(light_models()), help="light models (default: all nine)")
    parser.add_argument("--repeat", type=int, default=5, help="timed turns (the minimum is kept)")
    parser.add_argument("--emulated", default="groq", help="operand-rounding device modes, comma-separated")
    parser.add_argument("--faithful", default="a100:tensorrt", help="block-FMA device modes, comma-separated")
    parser.add_argument("--faithful-models", default="squeezenet", help="models the block-FMA path runs on")
    parser.add_argument("--batch-model", default="squeezenet")
    parser.add_argument("--batches", default="1,2,4,8")
    parser.add_argument("--full-audit", default="resnet50", help="light model of the full-audit contender ('': none)")
    parser.add_argument("--full-devices", default=FIVE_DEVICES, help="its devices, comma-separated")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    rows = [row for name in args.models.split(",") if name for row in measure_model(name, args)]
    batches = measure_batches(args) if args.batches else []
    full = None
    if args.full_audit:
        model = light_folder() / f"light_{args.full_audit}.onnx"
        full = full_audit(model, args.full_devices.split(","), max(1, min(args.repeat, 2)))
    if args.json:
        print(json.dumps({"models": rows, "batches": batches, "full_audit": full}, indent=2))
    else:
        print(f"ONNX light models, min of {args.repeat} turns, round-robin; load average {os.getloadavg()[0]:.1f}")
        print_table(rows, batches)
        if full is not None:
            print_full_audit(full)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
