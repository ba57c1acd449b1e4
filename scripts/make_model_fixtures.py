"""Make the PyTorch-exported ONNX models the model-audit tests run (tests/data/models/).

PyTorch is not a dependency of hwbench: this script runs once, in a separate virtual environment,
and its outputs (small .onnx files and their inputs as .npz, keyed by the graph's input names) are
committed. To make them again::

    python3 -m venv /tmp/torchenv
    /tmp/torchenv/bin/pip install torch==2.13.0 onnx
    /tmp/torchenv/bin/python scripts/make_model_fixtures.py tests/data/models

Four models, each small enough to audit on five devices in seconds, each exported in eval mode with
the TorchScript exporter (``dynamo=False``) at opset 17 and seeded weights:

- ``mlp``: Linear(16, 64) - GELU (erf) - Linear(64, 10), a classifier of 8 rows (logits);
- ``cnn``: Conv 3x3 - ReLU - BatchNorm - MaxPool - Conv 3x3 - ReLU - global average pool - Linear,
  on 4 images of 3 x 16 x 16 (BatchNorm after the ReLU, so the exporter cannot fold it into the Conv);
- ``transformer``: one ``nn.TransformerEncoderLayer`` (d_model 32, 4 heads, feed-forward 64,
  batch first) on 2 sequences of 8 tokens: MatMul, Softmax, LayerNormalization, ReLU (PyTorch's
  fused fast path is turned off so that the exporter sees the layer's ops);
- ``lstm``: ``nn.LSTM`` (input 8, hidden 16) over 5 steps of 2 sequences, then Linear(16, 4) on the
  last step: ONNX's LSTM op.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

OPSET = 17


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Cnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.BatchNorm2d(8),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class Lstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm, self.head = nn.LSTM(8, 16, batch_first=True), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def models() -> dict[str, tuple[nn.Module, torch.Tensor]]:
    """Each model (seeded weights, eval mode) and its input."""
    torch.manual_seed(0)
    cnn = Cnn()
    with torch.no_grad():  # a BatchNorm with statistics of its own, not the identity
        bn = cnn.features[2]
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
    gen = torch.Generator().manual_seed(1)
    return {
        "mlp": (Mlp(), torch.randn(8, 16, generator=gen)),
        "cnn": (cnn, torch.randn(4, 3, 16, 16, generator=gen)),
        "transformer": (Encoder(), torch.randn(2, 8, 32, generator=gen)),
        "lstm": (Lstm(), torch.randn(2, 5, 8, generator=gen)),
    }


def export(name: str, model: nn.Module, x: torch.Tensor, folder: Path) -> None:
    model.eval()
    path = folder / f"{name}.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model, (x,), str(path), input_names=["x"], output_names=["y"], opset_version=OPSET, dynamo=False
        )
    np.savez(folder / f"{name}_inputs.npz", x=x.numpy())
    print(f"{path}: {path.stat().st_size} bytes")


def main(folder: str) -> None:
    torch.backends.mha.set_fastpath_enabled(False)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for name, (model, x) in models().items():
        export(name, model, x, out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/models")
