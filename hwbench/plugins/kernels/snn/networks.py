"""The study's trainable spiking networks (Sun et al. 2022, Table I), written once against the ops interface.

- DSNN ``n_in-hidden-10`` (784-1000-10): fully connected, a spiking population after each layer.
- CSNN ``5C12-MP2-5C64-MP2-10``: 5x5 convolution (12 channels, no padding), 2x2 max-pool, spiking
  population; 5x5 convolution (64), max-pool, spiking population; fully connected to 10, spiking
  output. Max-pooling acts on the convolution's currents, before the neurons (snnTorch's
  tutorial CSNN).

Every population is the chosen snnTorch class (``leaky`` / ``synaptic`` / ``rleaky``; the CSNN
has no recurrent variant). Layers are bias-free (``nn.Linear(..., bias=False)``): the
neuromorphic chips' LIF kernels take no bias, so a trained DSNN deploys onto them unchanged.
Weights are drawn as PyTorch's default initialisation does, ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``.

Beyond the forward ops interface (:class:`hwbench.core.ops.Ops`) a trainer's namespace provides
what gradients and images need (:class:`TrainOps`): ``spike`` (Heaviside forward, surrogate
backward), ``detach`` (stop the gradient: snnTorch detaches its reset signal), ``conv2d_nchw``,
``max_pool2`` and ``reshape``. The time loop belongs to the engine: a network gives its
initial state, the first layer's current and one step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hwbench.core.errors import UsageError
from hwbench.core.ops import Ops
from hwbench.plugins.kernels.snn import neurons
from hwbench.plugins.kernels.snn.neurons import NeuronParams
from hwbench.plugins.kernels.snn.surrogate import Surrogate

NETS = ("dsnn", "csnn")
ENCODINGS = ("direct", "rate")
N_CLASSES = 10


class TrainOps(Ops, Protocol):
    """The ops interface plus what a trainable network needs."""

    def spike(self, v: Any) -> Any:
        """``H(v)`` (``H(0) = 0``) forward; the surrogate's ``dz/dU`` backward."""

    def detach(self, x: Any) -> Any: ...
    def conv2d_nchw(self, x: Any, w: Any) -> Any:
        """NCHW input, OIHW weights, stride 1, no padding (not :meth:`Ops.conv2d`: NHWC, padded)."""

    def max_pool2(self, x: Any) -> Any:
        """2x2 max-pool, stride 2, NCHW."""

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any: ...


@dataclass(frozen=True)
class NetSpec:
    """Which network, which neurons, how it is driven. ``n_in`` is 784 (28x28) or 64 (8x8 digits)."""

    net: str = "dsnn"
    neuron: str = "leaky"
    reset: str = "subtract"
    surrogate: Surrogate = field(default_factory=Surrogate)
    n_in: int = 784
    hidden: int = 1000
    channels: tuple[int, int] = (12, 64)
    n_steps: int = 25
    encoding: str = "direct"
    beta: float = 0.95
    alpha: float = 0.9
    thr: float = 1.0

    def __post_init__(self) -> None:
        _choice("net", self.net, NETS)
        _choice("neuron", self.neuron, neurons.NEURONS)
        _choice("reset", self.reset, neurons.RESETS)
        _choice("encoding", self.encoding, ENCODINGS)
        if self.net == "csnn" and self.neuron == "rleaky":
            raise UsageError("the CSNN has no recurrent variant; use --neuron leaky or synaptic")
        if self.net == "csnn" and self.n_in != 784:
            raise UsageError("the CSNN takes 28x28 images (n_in 784)")
        for name in ("n_in", "hidden", "n_steps"):
            if int(getattr(self, name)) < 1:
                raise UsageError(f"{name} must be a positive integer, got {getattr(self, name)}")

    @property
    def params(self) -> NeuronParams:
        return NeuronParams(
            beta=self.beta, thr=self.thr, reset=self.reset, alpha=self.alpha if self.neuron == "synaptic" else None
        )

    @property
    def side(self) -> int:
        return math.isqrt(self.n_in)

    def layer_sizes(self) -> list[tuple[int, ...]]:
        """Per-sample shape of each spiking population."""
        if self.net == "dsnn":
            return [(self.hidden,), (N_CLASSES,)]
        c1, c2 = self.channels
        s1 = (self.side - 4) // 2
        s2 = (s1 - 4) // 2
        return [(c1, s1, s1), (c2, s2, s2), (N_CLASSES,)]


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UsageError(f"unknown {name} '{value}'; choose from: {', '.join(allowed)}")


def init_params(spec: NetSpec, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded float64 weights in PyTorch's default ranges (``x @ w`` layout; convolutions OIHW)."""
    rng = np.random.default_rng(seed)

    def u(fan_in: int, shape: tuple[int, ...]) -> np.ndarray:
        b = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-b, b, shape)

    if spec.net == "dsnn":
        p = {"w1": u(spec.n_in, (spec.n_in, spec.hidden)), "w2": u(spec.hidden, (spec.hidden, N_CLASSES))}
        if spec.neuron == "rleaky":
            p["v1"] = u(spec.hidden, (spec.hidden, spec.hidden))
            p["v2"] = u(N_CLASSES, (N_CLASSES, N_CLASSES))
        return p
    c1, c2 = spec.channels
    flat = int(np.prod(spec.layer_sizes()[1]))
    return {"c1": u(25, (c1, 1, 5, 5)), "c2": u(25 * c1, (c2, c1, 5, 5)), "w3": u(flat, (flat, N_CLASSES))}


def initial_state(ops: TrainOps, spec: NetSpec, batch: int, dtype: Any) -> list[dict[str, Any]]:
    """Zero state per population: ``u``, ``z`` (and ``i`` for Synaptic)."""
    names = ("i", "u", "z") if spec.neuron == "synaptic" else ("u", "z")
    return [{k: ops.asarray(np.zeros((batch, *shape), dtype)) for k in names} for shape in spec.layer_sizes()]


def first_current(ops: TrainOps, spec: NetSpec, params: dict[str, Any], x: Any) -> Any:
    """The first population's synaptic input for input ``x`` (``(B, n_in)`` or ``(B, 1, H, W)``)."""
    if spec.net == "dsnn":
        return ops.matmul(x, params["w1"])
    return ops.max_pool2(ops.conv2d_nchw(x, params["c1"]))


def population(ops: TrainOps, spec: NetSpec, st: dict[str, Any], drive: Any, v: Any = None) -> dict[str, Any]:
    """One population's step: the snnTorch class's update, then the spike (surrogate backward)."""
    p = spec.params
    r = ops.detach(st["z"])  # snnTorch's mem_reset: H(u_{t-1} - thr), detached
    out: dict[str, Any] = {}
    if spec.neuron == "synaptic":
        out["i"], out["u"] = neurons.synaptic(ops, st["i"], st["u"], r, drive, p)
    elif spec.neuron == "rleaky":
        out["u"] = neurons.rleaky(ops, st["u"], r, drive, ops.matmul(st["z"], v), p)
    else:
        out["u"] = neurons.leaky(ops, st["u"], r, drive, p)
    out["z"] = ops.spike(out["u"] - p.thr)
    return out


def step(
    ops: TrainOps, spec: NetSpec, params: dict[str, Any], state: list[dict[str, Any]], cur1: Any
) -> list[dict[str, Any]]:
    """One time step of the whole network, given the first population's current."""
    if spec.net == "dsnn":
        h = population(ops, spec, state[0], cur1, params.get("v1"))
        o = population(ops, spec, state[1], ops.matmul(h["z"], params["w2"]), params.get("v2"))
        return [h, o]
    h1 = population(ops, spec, state[0], cur1)
    h2 = population(ops, spec, state[1], ops.max_pool2(ops.conv2d_nchw(h1["z"], params["c2"])))
    flat = ops.reshape(h2["z"], (h2["z"].shape[0], -1))
    return [h1, h2, population(ops, spec, state[2], ops.matmul(flat, params["w3"]))]


def ce_count_loss(ops: TrainOps, counts: Any, onehot: Any) -> Any:
    """snnTorch ``SF.ce_count_loss()``: cross-entropy of ``log_softmax(spike counts)``, batch mean.

    Counts lie in ``[0, n_steps]``, so ``exp`` needs no max-shift in the loss's float32 or float64.
    """
    lse = ops.reshape(ops.log(ops.sum(ops.exp(counts), axis=1)), (-1, 1))
    return -ops.sum(ops.sum(onehot * (counts - lse), axis=1), axis=0) / counts.shape[0]
