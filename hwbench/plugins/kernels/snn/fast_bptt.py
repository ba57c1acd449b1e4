"""A hand-written BPTT for the feed-forward Leaky DSNN: the same forward, a cheaper backward.

``jax.grad`` through ``lax.scan`` differentiates the time loop step by step: each reversed step
recomputes the surrogate, runs two small matrix products (``dz1 = du2 W2^T`` and the outer product
``z1^T du2`` into ``dW2``) and moves residuals through dynamic slices. On a 2-core CPU that backward
took about five times the forward (DSNN 784-1000-10, batch 128, 25 steps). The gradient has a
simple closed structure, which this module computes directly (custom VJP of the output spikes
with respect to the first layer's current and ``W2``):

- The reset signal is detached (snnTorch's ``mem_reset``), so the membrane carries the gradient
  back through the leak only: ``du_t = dz_t s(u_t - thr) + beta m_{t+1} du_{t+1}``, with ``s`` the
  surrogate's derivative and ``m_{t+1} = 1`` (subtract reset) or ``1 - z_t`` (Leaky's zero reset:
  the old potential is cleared before it leaks).
- The output layer's reverse recurrence is ``(T, B, 10)``: tiny. Then *every* time step's
  ``dz1 = du2 W2^T`` is one ``(T B, 10) x (10, H)`` product and ``dW2 = Z1^T dU2`` one
  ``(H, T B) x (T B, 10)`` product over the binary spikes, instead of ``T`` pairs of small ones.
- The hidden layer's reverse recurrence is elementwise; the first layer's current is the same at
  every step (direct encoding), so its gradient is the sum over the steps.

The forward pass is computed by the same functions as the autodiff path
(:func:`hwbench.plugins.kernels.snn.neurons.leaky`, the spike ``u - thr > 0``), so losses and
spikes are bit-identical to it; gradients differ from it only by summation order (the snnTorch
gradient vectors and a test against ``jax.grad`` check both). Other networks (Synaptic, RLeaky,
the CSNN, rate encoding) keep ``jax.grad`` through the scan.
"""

from __future__ import annotations

from typing import Any

from hwbench.plugins.kernels.snn import neurons
from hwbench.plugins.kernels.snn.networks import NetSpec


def applies(spec: NetSpec) -> bool:
    """Whether :func:`output_spikes` computes this network (feed-forward Leaky DSNN, direct input)."""
    return spec.net == "dsnn" and spec.neuron == "leaky" and spec.encoding == "direct"


def output_spikes(ops: Any, spec: NetSpec, w2: Any, cur1: Any) -> Any:
    """Output spikes ``(n_steps, batch, 10)`` given the first layer's current ``(batch, hidden)``.

    Differentiable in ``cur1`` and ``w2`` (custom VJP); ``ops`` is the trainer's JAX ops namespace.
    """
    import jax

    @jax.custom_vjp
    def run(cur: Any, w: Any) -> Any:
        return _forward(ops, spec, cur, w)[0]

    def fwd(cur: Any, w: Any) -> Any:
        z2, res = _forward(ops, spec, cur, w)
        return z2, (*res, w)

    def bwd(res: Any, g: Any) -> Any:
        return _backward(ops, spec, res, g)

    run.defvjp(fwd, bwd)
    return run(cur1, w2)


def _spike(ops: Any, u: Any, thr: float) -> Any:
    v = u - thr
    return (v > 0).astype(v.dtype)


def _forward(ops: Any, spec: NetSpec, cur1: Any, w2: Any) -> tuple[Any, tuple[Any, ...]]:
    """The time loop (as :func:`hwbench.plugins.kernels.snn.networks.step`), keeping only the
    output layer's potentials and spikes (``(T, B, 10)``) for the backward."""
    from jax import lax

    p = spec.params
    jnp = ops._jnp
    zero1 = jnp.zeros(cur1.shape, cur1.dtype)
    zero2 = jnp.zeros((cur1.shape[0], w2.shape[1]), cur1.dtype)

    def body(st: Any, _: Any) -> Any:
        u1, z1, u2, z2 = st
        u1 = neurons.leaky(ops, u1, z1, cur1, p)
        z1 = _spike(ops, u1, p.thr)
        u2 = neurons.leaky(ops, u2, z2, ops.matmul(z1, w2), p)
        z2 = _spike(ops, u2, p.thr)
        return (u1, z1, u2, z2), (u2, z2)

    _, (u2s, z2s) = lax.scan(body, (zero1, zero1, zero2, zero2), None, length=spec.n_steps)
    return z2s, (cur1, u2s, z2s)


def _output_layer_back(ops: Any, spec: NetSpec, a: Any, z: Any) -> Any:
    """``du_t = a_t + beta m_{t+1} du_{t+1}`` over the steps, reversed (``a``, ``z``: ``(T, B, 10)``)."""
    from jax import lax

    beta = spec.params.beta
    jnp = ops._jnp
    zero = spec.reset == "zero"

    def body(d: Any, xs: Any) -> Any:
        at, zt = xs
        # zero reset: m_{t+1} = 1 - z_t, the step after a spike starts from a cleared potential
        d = at + (jnp.where(zt > 0.5, jnp.zeros_like(d), beta * d) if zero else beta * d)
        return d, d

    return lax.scan(body, jnp.zeros_like(a[0]), (a, z), reverse=True)[1]


def _backward(ops: Any, spec: NetSpec, res: tuple[Any, ...], g: Any) -> tuple[Any, Any]:
    """Gradients of ``<g, output spikes>`` with respect to ``cur1`` and ``w2``.

    The hidden layer's gradient ``sum_t du1_t`` is ``sum_t C_t a_t`` with ``a_t = s(u1_t - thr) dz1_t``
    and ``C_t = 1 + beta m_t C_{t-1}`` (``C_0 = 1``): a *forward* recurrence. So the hidden layer is
    recomputed forward in time (elementwise, cheap) instead of stored, and both sums accumulate
    in the loop's carry: no ``(T, B, hidden)`` array is ever written.
    """
    from jax import lax

    jnp = ops._jnp
    cur1, u2s, z2s, w2 = res
    p = spec.params
    sg = spec.surrogate
    du2 = _output_layer_back(ops, spec, g * sg.derivative(ops, u2s - p.thr), z2s)  # (T, B, 10)
    zero = spec.reset == "zero"
    w2t = w2.T
    # dW2^T += du2_t^T z1: as (10, hidden), XLA's CPU dot is ~3x faster than as (hidden, 10); and
    # with du2_t^T laid out (10, batch) once, outside the loop, it is a plain row-major product that
    # XLA:CPU hands to its fast dot kernel (contracting both operands' batch axis took a generic path)
    du2t = jnp.swapaxes(du2, 1, 2)

    def body(st: Any, xs: Any) -> Any:
        u1, z1, c, dcur, dw2t = st
        du2_t, du2t_t = xs
        # subtract reset: C_t = 1 + beta C_{t-1} is the same for every neuron (a scalar carry);
        # zero reset masks it per neuron
        c = 1.0 + (jnp.where(z1 > 0.5, jnp.zeros_like(c), p.beta * c) if zero else p.beta * c)
        u1 = neurons.leaky(ops, u1, z1, cur1, p)
        z1 = _spike(ops, u1, p.thr)
        dcur = dcur + c * sg.derivative(ops, u1 - p.thr) * jnp.matmul(du2_t, w2t)
        dw2t = dw2t + jnp.matmul(du2t_t, z1)
        return (u1, z1, c, dcur, dw2t), None

    zero1 = jnp.zeros_like(cur1)
    c0 = zero1 if zero else jnp.zeros((), cur1.dtype)
    init = (zero1, zero1, c0, zero1, jnp.zeros_like(w2t))
    _, _, _, dcur, dw2t = lax.scan(body, init, (du2, du2t))[0]
    return dcur, dw2t.T
