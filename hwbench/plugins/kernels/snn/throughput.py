"""Training throughput as the snnTorch-on-IPU study defines it, its sweeps, FLOPs and compute split.

Throughput = batch size / wall time of one minibatch's training step (forward through all time
steps, BPTT gradient, AdamW update), timed after compilation on seeded synthetic input of
MNIST's shape; min and median of ``repeats`` steps are kept. FLOPs: the model's operations, one
fused multiply-add = one FLOP (:func:`hwbench.plugins.kernels.snn.training.flops_per_step`).

Compute split between neuron dynamics and matrix products: the same training step is timed on a
*linear twin* of the network (each population passes its input current straight on as its
output, recurrent products kept; no leak, reset, threshold or surrogate), which leaves the matrix
products, convolutions and pooling with their gradients and the AdamW update. Its time over the
full step's is the measured matrix-product share; the rest is neuron dynamics (by subtraction,
so it includes what XLA could not fuse away).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from typing import Any

import numpy as np

from hwbench.plugins.kernels.snn import networks as nets
from hwbench.plugins.kernels.snn import training as tr
from hwbench.plugins.kernels.snn.results import ThroughputPoint

BATCH_SWEEP = (8, 16, 32, 64, 128)
WIDTH_SWEEP = (250, 500, 1000, 2000)
NEURON_SWEEP = ("leaky", "synaptic", "rleaky")
PRECISION_SWEEP = ("fp32", "bf16", "fp16")
DEPTH_SWEEP = ((6, 32), (12, 64), (24, 128))  # CSNN convolution channels (N1, N2)


def synthetic_batch(spec: nets.NetSpec, batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded input of MNIST's shape (and labels) in the network's layout."""
    rng = np.random.default_rng(seed)
    shape = (batch, spec.n_in) if spec.net == "dsnn" else (batch, 1, spec.side, spec.side)
    x = rng.random(shape)
    if spec.encoding == "rate":
        x = (rng.random((spec.n_steps, *shape)) < x).astype(np.float64)
    return x.astype(np.float32), rng.integers(0, nets.N_CLASSES, batch)


def _linear_population(ops: Any, spec: nets.NetSpec, st: dict[str, Any], drive: Any, v: Any = None) -> dict[str, Any]:
    z = drive if v is None else drive + ops.matmul(st["z"], v)
    return {**st, "z": z}


def time_steps(trainers: list[tr.Trainer], x: np.ndarray, y: np.ndarray, repeats: int) -> list[list[float]]:
    """Wall times of ``repeats`` training steps per trainer, after one untimed (compiling) step each.

    The trainers' steps are interleaved, so that a shared machine's load disturbs them alike.
    """
    for t in trainers:
        t.step(x, y).block_until_ready()
    times: list[list[float]] = [[] for _ in trainers]
    for _ in range(repeats):
        for t, out in zip(trainers, times):
            t0 = time.perf_counter()
            t.step(x, y).block_until_ready()
            out.append(time.perf_counter() - t0)
    return times


def measure(cfg: tr.TrainConfig, batch: int, repeats: int = 5, split: bool = True) -> ThroughputPoint:
    """One sweep point: time the training step (and, interleaved, its linear twin when ``split``)."""
    spec = cfg.spec
    x, y = synthetic_batch(spec, batch, cfg.seed)
    trainers = [tr.Trainer(cfg)]
    if split:
        twin = tr.Trainer(cfg)
        with twin._ctx():
            twin._grads = _twin_grads(cfg, tr.JaxTrainOps(cfg.compute_dtype, spec.surrogate))
        trainers.append(twin)
    timed = time_steps(trainers, x, y, repeats)
    times = timed[0]
    share = min(timed[1]) / min(times) if split else None
    flops = tr.flops_per_step(spec, batch)
    best = min(times)
    return ThroughputPoint(
        net=spec.net,
        neuron=spec.neuron,
        precision=cfg.precision,
        batch=batch,
        hidden=spec.hidden,
        channels=list(spec.channels),
        n_steps=spec.n_steps,
        encoding=spec.encoding,
        repeats=repeats,
        step_s_min=best,
        step_s_median=statistics.median(times),
        images_per_s=batch / best,
        images_per_s_median=batch / statistics.median(times),
        flops_per_step=flops["total"],
        tflops=flops["total"] / best / 1e12,
        matmul_flop_share=flops["matmul"] / flops["total"],
        matmul_time_share=share,
    )


def _twin_grads(cfg: tr.TrainConfig, ops: tr.JaxTrainOps) -> Any:
    """The compiled shard gradients of the linear twin (``networks.population`` swapped out)."""
    import jax

    def grads(params: dict[str, Any], x: Any, onehot: Any, weight: Any) -> Any:
        original = nets.population
        nets.population = _linear_population  # only while tracing: the twin's graph is built here
        try:
            return tr.shard_grads(params, x, onehot, weight, cfg=cfg, ops=ops, fast=False)
        finally:
            nets.population = original

    return jax.jit(grads)


def sweep(name: str, base: tr.TrainConfig, batch: int = 128, repeats: int = 5) -> list[ThroughputPoint]:
    """The study's sweeps: ``batch`` (8...128), ``width`` (DSNN hidden), ``depth`` (CSNN channels
    (N1, N2)), ``neuron``, ``precision``."""
    if name == "batch":
        return [measure(base, b, repeats) for b in BATCH_SWEEP]
    if name == "width":
        return [measure(replace(base, spec=replace(base.spec, hidden=w)), batch, repeats) for w in WIDTH_SWEEP]
    if name == "neuron":
        neurons = NEURON_SWEEP if base.spec.net == "dsnn" else NEURON_SWEEP[:2]
        return [measure(replace(base, spec=replace(base.spec, neuron=n)), batch, repeats) for n in neurons]
    if name == "depth":
        spec = replace(base.spec, net="csnn", neuron="leaky" if base.spec.neuron == "rleaky" else base.spec.neuron)
        return [measure(replace(base, spec=replace(spec, channels=c)), batch, repeats) for c in DEPTH_SWEEP]
    if name == "precision":
        return [measure(replace(base, precision=p), batch, repeats, split=False) for p in PRECISION_SWEEP]
    raise ValueError(name)


SWEEPS = ("batch", "width", "depth", "neuron", "precision")
