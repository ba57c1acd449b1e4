"""snnTorch's side of benchmarks/snn_training.py (run with the scratch environment's python).

DSNN 784-1000-10 of ``snn.Leaky`` (beta 0.95, atan surrogate, subtract reset), bias-free
``nn.Linear`` layers, 25 steps with the image presented at every step, ``SF.ce_count_loss``,
``torch.optim.AdamW``; float32 on the CPU. ``--hoist`` computes ``fc1(x)`` once instead of once per
step (what hwbench's direct encoding does). Prints one JSON line: the step times in seconds.

    $HWBENCH_SNNTORCH_PYTHON benchmarks/_snntorch_dsnn_step.py --batch 128 --repeats 10
"""

from __future__ import annotations

import argparse
import json
import time

import snntorch as snn
import snntorch.functional as SF
import torch
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--hoist", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    fc1, fc2 = nn.Linear(784, a.hidden, bias=False), nn.Linear(a.hidden, 10, bias=False)
    lif1, lif2 = snn.Leaky(beta=0.95), snn.Leaky(beta=0.95)
    opt = torch.optim.AdamW(list(fc1.parameters()) + list(fc2.parameters()), lr=5e-4)
    loss_fn = SF.ce_count_loss()
    x, y = torch.rand(a.batch, 784), torch.randint(0, 10, (a.batch,))

    def step() -> None:
        mem1, mem2 = lif1.reset_mem(), lif2.reset_mem()
        out = []
        cur = fc1(x) if a.hoist else None
        for _ in range(a.steps):
            spk1, mem1 = lif1(cur if a.hoist else fc1(x), mem1)
            spk2, mem2 = lif2(fc2(spk1), mem2)
            out.append(spk2)
        loss = loss_fn(torch.stack(out), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()  # warm-up
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "times": times,
                "torch": torch.__version__,
                "snntorch": snn.__version__,
                "threads": torch.get_num_threads(),
            }
        )
    )


if __name__ == "__main__":
    main()
