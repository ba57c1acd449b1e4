"""Training the spiking networks on the JAX engine: BPTT through ``lax.scan``, surrogate spikes, AdamW.

**Which engines can train.** Only JAX. A training step needs reverse-mode differentiation through
all time steps with a custom derivative attached to the spike (the surrogate): JAX gives both
(``jax.grad``, ``jax.custom_jvp``) on the same :class:`~hwbench.core.engines.jax_engine.JaxOps`
the forward kernels use. The numpy engine has no automatic differentiation; hwbench's TensorFlow
and ONNX Runtime engines are forward executors of a compiled step loop (ONNX Runtime's training
API is a separate package, and TensorFlow's tape is not wired into that executor); the emulated
devices round every result by bit manipulation, which has no derivative, so reduced-precision
training here is native JAX dtypes plus an emulated, stochastically rounded weight update.

**Precisions.** ``fp64`` and ``fp32``: everything in that type. ``bf16`` and ``fp16``: mixed
precision, forward and backward in the half type, fp32 master weights and AdamW state (the
gradient of the cast back to fp32 is fp32); ``fp16`` scales the loss by a static 1024 and skips an
update whose gradients are not finite. ``ipu-fp16-sr``: the IPU's fp16 with hardware stochastic
rounding, through the ``ipu`` device's emulated ``fp16-sr`` profile: forward and backward in
fp16 and the weights *stored* in fp16 with no fp32 master copy, each AdamW update rounded to
fp16 stochastically (the profile's ``add`` class: format, rounding and random bits), the moments
in fp32. The loss (log-softmax of the spike counts) is always computed in fp32 or fp64.

**Input.** ``direct``: the image is presented at every step, so the first layer's current
``W x`` is the same at every step and is computed once, outside the time loop (its gradient
sums over the steps); ``rate``: a Bernoulli spike raster ``(n_steps, batch, ...)``, one first-layer
product per step (what a neuromorphic chip receives).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial, reduce
from typing import Any

import numpy as np

from hwbench.core.engines.jax_engine import JaxOps, x64_mode
from hwbench.core.errors import UsageError
from hwbench.plugins.kernels.snn import fast_bptt
from hwbench.plugins.kernels.snn import networks as nets
from hwbench.plugins.kernels.snn.networks import NetSpec
from hwbench.plugins.kernels.snn.surrogate import Surrogate

PRECISIONS = ("fp64", "fp32", "bf16", "fp16", "ipu-fp16-sr")
FP16_LOSS_SCALE = 1024.0


@dataclass(frozen=True)
class TrainConfig:
    """One training set-up. ``lr`` / ``weight_decay`` / betas / eps are AdamW's (PyTorch's defaults but lr)."""

    spec: NetSpec = field(default_factory=NetSpec)
    precision: str = "fp32"
    lr: float = 5e-4
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    seed: int = 0
    # data-parallel shards of a minibatch, each on its own thread (Trainer); 2 uses a 2-core machine
    # and keeps results independent of the machine's core count
    shards: int = 2

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise UsageError(f"shards must be a positive integer, got {self.shards}")
        if self.precision not in PRECISIONS:
            raise UsageError(f"unknown precision '{self.precision}'; choose from: {', '.join(PRECISIONS)}")
        if not self.lr > 0 or self.weight_decay < 0:
            raise UsageError("lr must be positive and weight_decay non-negative")

    @property
    def loss_scale(self) -> float:
        """fp16's static loss scale (1 otherwise): the loss is multiplied by it before the
        gradients are taken, and the summed gradients divided by it before the update."""
        return FP16_LOSS_SCALE if self.precision == "fp16" else 1.0

    @property
    def master_dtype(self) -> np.dtype:
        return np.dtype(np.float64 if self.precision == "fp64" else np.float32)

    @property
    def compute_dtype(self) -> Any:
        import jax.numpy as jnp

        return {"fp64": jnp.float64, "fp32": jnp.float32, "bf16": jnp.bfloat16}.get(self.precision, jnp.float16)


class JaxTrainOps(JaxOps):
    """:class:`JaxOps` plus what training needs (:class:`hwbench.plugins.kernels.snn.networks.TrainOps`)."""

    def __init__(self, dtype: Any, surrogate: Surrogate) -> None:
        super().__init__(dtype)
        from jax import lax

        self._lax = lax
        self._spike = _surrogate_spike(self, surrogate)
        self._heaviside = self._spike

    @property
    def heaviside_detached(self) -> bool:
        """Whether spikes are the Heaviside step and resets detached, as the hand-written BPTT of
        :mod:`.fast_bptt` assumes (a subclass that changes either is differentiated by ``jax.grad``)."""
        return self._spike is self._heaviside and type(self).detach is JaxTrainOps.detach

    def asarray(self, x: Any) -> Any:
        return self._jnp.asarray(x, dtype=self.dtype)

    def spike(self, v: Any) -> Any:
        return self._spike(v)

    def detach(self, x: Any) -> Any:
        return self._lax.stop_gradient(x)

    def conv2d_nchw(self, x: Any, w: Any) -> Any:
        return self._lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def max_pool2(self, x: Any) -> Any:
        return self._lax.reduce_window(x, -self._jnp.inf, self._lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def reshape(self, x: Any, shape: tuple[int, ...]) -> Any:
        return self._jnp.reshape(x, shape)


def _surrogate_spike(ops: JaxOps, surrogate: Surrogate, forward: Any = None) -> Any:
    """``H(v)`` with ``H(0) = 0`` forward and the surrogate's derivative as its JVP.

    ``forward`` replaces the Heaviside step (tests put the surrogate's smooth primitive there, so
    that the whole BPTT gradient becomes a true derivative that finite differences can check).
    """
    import jax

    @jax.custom_jvp
    def spike(v: Any) -> Any:
        return (v > 0).astype(v.dtype) if forward is None else forward(v)

    @spike.defjvp
    def _jvp(primals: Any, tangents: Any) -> Any:
        (v,), (dv,) = primals, tangents
        return spike(v), surrogate.derivative(ops, v) * dv

    return spike


def output_spikes(ops: JaxTrainOps, spec: NetSpec, params: dict[str, Any], x: Any, *, fast: bool = True) -> Any:
    """Output spikes ``(n_steps, batch, 10)``: ``x`` is ``(batch, ...)`` (direct) or ``(n_steps, batch, ...)``.

    ``fast``: the feed-forward Leaky DSNN's hand-written BPTT (:mod:`.fast_bptt`) where it applies;
    ``False`` differentiates the scan with ``jax.grad`` (the reference the fast path is tested against).
    """
    from jax import lax

    batch = x.shape[0] if spec.encoding == "direct" else x.shape[1]
    state = nets.initial_state(ops, spec, batch, ops.dtype)
    if spec.encoding == "direct":
        cur1 = nets.first_current(ops, spec, params, x)  # the same at every step: computed once
        if fast and ops.heaviside_detached and fast_bptt.applies(spec):
            return fast_bptt.output_spikes(ops, spec, params["w2"], cur1)

        def body(st: Any, _: Any) -> Any:
            new = nets.step(ops, spec, params, st, cur1)
            return new, new[-1]["z"]

        return lax.scan(body, state, None, length=spec.n_steps)[1]

    def body_rate(st: Any, xt: Any) -> Any:
        new = nets.step(ops, spec, params, st, nets.first_current(ops, spec, params, xt))
        return new, new[-1]["z"]

    return lax.scan(body_rate, state, x)[1]


def loss_fn(
    params: dict[str, Any], x: Any, onehot: Any, *, ops: JaxTrainOps, spec: NetSpec, loss_dtype: Any, fast: bool = True
) -> Any:
    """ce_count_loss of the network run in ``ops.dtype`` on the parameters cast to it (``fast``: see
    :func:`output_spikes`)."""
    import jax.numpy as jnp

    cast = {k: v.astype(ops.dtype) for k, v in params.items()}
    counts = jnp.sum(output_spikes(ops, spec, cast, x.astype(ops.dtype), fast=fast), axis=0).astype(loss_dtype)
    return nets.ce_count_loss(ops, counts, onehot.astype(loss_dtype))


@dataclass
class AdamState:
    """AdamW moments (master precision) and the step count."""

    m: dict[str, Any]
    v: dict[str, Any]
    t: Any


def adamw(
    params: dict[str, Any], grads: dict[str, Any], st: AdamState, cfg: TrainConfig
) -> tuple[dict[str, Any], AdamState]:
    """One ``torch.optim.AdamW`` step (decoupled decay first, then the bias-corrected Adam step)."""
    import jax.numpy as jnp

    b1, b2 = cfg.betas
    t = st.t + 1
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    m = {k: st.m[k] + (1 - b1) * (g - st.m[k]) for k, g in grads.items()}  # torch: exp_avg.lerp_(grad, 1 - b1)
    v = {k: b2 * st.v[k] + (1 - b2) * g * g for k, g in grads.items()}
    new = {
        k: p * (1 - cfg.lr * cfg.weight_decay) - (cfg.lr / bc1) * m[k] / (jnp.sqrt(v[k]) / jnp.sqrt(bc2) + cfg.eps)
        for k, p in params.items()
    }
    return new, AdamState(m, v, t)


def _register_adam_pytree() -> None:
    import jax

    with contextlib.suppress(ValueError):  # already registered
        jax.tree_util.register_pytree_node(AdamState, lambda s: ((s.m, s.v, s.t), None), lambda _, c: AdamState(*c))


def _ipu_store() -> Any:
    """The ``ipu`` device's ``fp16-sr`` profile entry for an add result (format, rounding, random bits)."""
    from hwbench.core.ops import OpClass
    from hwbench.plugins.devices.ipu import IpuDevice

    return IpuDevice().numerics("fp16-sr").ops[OpClass.ADD]


def shard_grads(
    params: dict[str, Any],
    x: Any,
    onehot: Any,
    weight: Any,
    *,
    cfg: TrainConfig,
    ops: JaxTrainOps,
    fast: bool = True,
) -> tuple[Any, dict[str, Any]]:
    """The loss and gradients of one shard of a minibatch, both weighted by ``weight`` (the shard's
    share of the minibatch, ``n_shard / batch``; 1 unsharded) and still multiplied by fp16's loss
    scale: summed over the shards they are the minibatch's (``fast``: see :func:`output_spikes`)."""
    import jax
    import jax.numpy as jnp

    loss_dtype = jnp.float64 if cfg.precision == "fp64" else jnp.float32
    f = partial(loss_fn, ops=ops, spec=cfg.spec, loss_dtype=loss_dtype, fast=fast)
    return jax.value_and_grad(lambda p: f(p, x, onehot) * (weight * cfg.loss_scale))(params)


def apply_grads(
    params: dict[str, Any], st: AdamState, losses: list[Any], grads: list[dict[str, Any]], *, cfg: TrainConfig
) -> Any:
    """Sum the shards' losses and gradients (in shard order) and take the AdamW step:
    ``(params, state, loss)``."""
    import jax
    import jax.numpy as jnp

    scale = cfg.loss_scale
    loss = reduce(operator.add, losses)
    total = {k: reduce(operator.add, [g[k].astype(cfg.master_dtype) for g in grads]) / scale for k in grads[0]}
    new, new_st = adamw(params, total, st, cfg)
    if cfg.precision == "fp16":  # skip a step whose scaled gradients overflowed
        ok = jnp.all(jnp.stack([jnp.all(jnp.isfinite(g)) for g in total.values()]))
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, params)
        new_st = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new_st, st)
    if cfg.precision == "ipu-fp16-sr":
        from hwbench.accuracy.numerics.rounding_jax import round_float

        sr = _ipu_store()
        new = {
            k: round_float(
                w,
                sr.resolved_format(),
                sr.rounding,
                seed=cfg.seed,
                counter=new_st.t * 64 + j,
                random_bits=sr.random_bits,
            )
            for j, (k, w) in enumerate(sorted(new.items()))
        }
    return new, new_st, loss / scale


def shard_slices(batch: int, shards: int) -> list[slice]:
    """``shards`` contiguous parts of a minibatch of ``batch`` samples, as equal as can be (fewer
    where the batch is smaller than ``shards``: no part is empty)."""
    n = max(1, min(shards, batch))
    bounds = [batch * i // n for i in range(n + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


class Trainer:
    """A network's parameters, its AdamW state and the compiled training step.

    ``step(x, y)`` trains on one minibatch (labels as integers) and returns the loss;
    ``counts(x)`` gives the output spike counts. Inputs are host numpy arrays in the network's
    layout (see :func:`output_spikes`).

    **Data parallel on threads.** A minibatch is cut into ``cfg.shards`` parts; each part's loss
    and gradients are one compiled program (:func:`shard_grads`), the parts run at once on
    threads (XLA releases the GIL while it runs, so each part gets a core), and a second program
    sums them in shard order and takes the AdamW step (:func:`apply_grads`). The time loop's
    small per-step operations do not spread over cores inside one XLA:CPU program, so this is
    what puts a second core to work. The result depends on ``shards`` (the order of the batch
    sum), never on the machine or on which thread finishes first.
    """

    def __init__(self, cfg: TrainConfig, params: dict[str, np.ndarray] | None = None) -> None:
        import jax
        import jax.numpy as jnp

        _register_adam_pytree()
        self.cfg = cfg
        self._x64 = cfg.precision == "fp64"
        self._pool: ThreadPoolExecutor | None = None
        self._traced: set[int] = set()  # shard sizes whose programs are traced (Trainer.step)
        with self._ctx():
            ops = JaxTrainOps(cfg.compute_dtype, cfg.spec.surrogate)
            p = nets.init_params(cfg.spec, cfg.seed) if params is None else params
            self.params = {k: jnp.asarray(np.asarray(v, cfg.master_dtype)) for k, v in p.items()}
            if cfg.precision == "ipu-fp16-sr":  # fp16 weights: representable values on an fp32 carrier
                self.params = {k: v.astype(jnp.float16).astype(jnp.float32) for k, v in self.params.items()}
            m, v = ({k: jnp.zeros_like(w) for k, w in self.params.items()} for _ in range(2))
            self.state = AdamState(m, v, jnp.asarray(0, jnp.int32))
            self._grads = jax.jit(partial(shard_grads, cfg=cfg, ops=ops))
            # the update writes the weights and moments in place (their buffers are donated): no
            # fresh multi-megabyte arrays, whose first touch costs page faults, at every step
            self._apply = jax.jit(partial(apply_grads, cfg=cfg), donate_argnums=(0, 1))
            self._counts = jax.jit(
                lambda p, x: jnp.sum(
                    output_spikes(ops, cfg.spec, {k: v.astype(ops.dtype) for k, v in p.items()}, x.astype(ops.dtype)),
                    axis=0,
                )
            )

    def _ctx(self) -> Any:
        return x64_mode(np.dtype(np.float64) if self._x64 else np.dtype(np.float32))

    def step(self, x: np.ndarray, y: np.ndarray) -> Any:
        onehot = np.eye(nets.N_CLASSES, dtype=self.cfg.master_dtype)[np.asarray(y)]
        batch = len(onehot)
        parts = shard_slices(batch, self.cfg.shards)
        batch_axis = 1 if self.cfg.spec.encoding == "rate" else 0

        def shard(s: slice) -> Any:
            xs = x[:, s] if batch_axis else x[s]
            with self._ctx():
                return self._grads(self.params, xs, onehot[s], (s.stop - s.start) / batch)

        # A shard size seen for the first time is traced here, one shard after another: tracing is
        # not to run on two threads at once (a trace may swap a module attribute while it runs,
        # as the linear twin of train-bench and the benchmark's --against do)
        sizes = {s.stop - s.start for s in parts}
        if len(parts) == 1 or not sizes <= self._traced:
            results = [shard(s) for s in parts]
            self._traced |= sizes
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.cfg.shards - 1, thread_name_prefix="hwbench-train")
            rest = [self._pool.submit(shard, s) for s in parts[1:]]
            results = [shard(parts[0])] + [f.result() for f in rest]
        with self._ctx():
            self.params, self.state, loss = self._apply(
                self.params, self.state, [r[0] for r in results], [r[1] for r in results]
            )
        return loss

    def counts(self, x: np.ndarray) -> np.ndarray:
        with self._ctx():
            return np.asarray(self._counts(self.params, x), np.float64)

    def host_params(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v, np.float64) for k, v in self.params.items()}


def accuracy(trainer: Trainer, x: np.ndarray, y: np.ndarray, batch: int = 256) -> float:
    """Fraction of samples whose most-spiking output neuron (lowest index on ties) is the label."""
    enc = trainer.cfg.spec.encoding
    n = int(x.shape[1] if enc == "rate" else x.shape[0])
    hits = 0
    for s in range(0, n, batch):
        xb = x[:, s : s + batch] if enc == "rate" else x[s : s + batch]
        hits += int(np.sum(np.argmax(trainer.counts(xb), axis=1) == y[s : s + batch]))
    return hits / max(n, 1)


def flops_per_step(spec: NetSpec, batch: int) -> dict[str, float]:
    """Model FLOPs of one training step (one FMA = one FLOP, fvcore's convention).

    Matrix products: the network's multiply-accumulates per time step times ``n_steps`` for the
    forward pass, and twice that for the backward pass (gradients of inputs and of weights);
    neuron dynamics: the elementwise updates (leak, integrate, reset, threshold; about 4 per
    neuron, 5 for Synaptic) forward and the same backward. These are the operations the model
    defines, whether or not an engine hoists or fuses them.
    """
    macs = _macs_per_sample(spec)
    neurons = sum(math.prod(s) for s in spec.layer_sizes())
    per_neuron = 5 if spec.neuron == "synaptic" else 4
    matmul = 3.0 * macs * batch * spec.n_steps
    dynamics = 2.0 * per_neuron * neurons * batch * spec.n_steps
    return {"matmul": matmul, "neuron": dynamics, "total": matmul + dynamics}


def _macs_per_sample(spec: NetSpec) -> float:
    if spec.net == "dsnn":
        rec = spec.hidden**2 + nets.N_CLASSES**2 if spec.neuron == "rleaky" else 0
        return float(spec.n_in * spec.hidden + spec.hidden * nets.N_CLASSES + rec)
    c1, c2 = spec.channels
    sizes = spec.layer_sizes()
    conv1_out = (spec.side - 4) ** 2
    conv2_out = (sizes[0][1] - 4) ** 2
    flat = math.prod(sizes[1])
    return float(conv1_out * c1 * 25 + conv2_out * c2 * c1 * 25 + flat * nets.N_CLASSES)
