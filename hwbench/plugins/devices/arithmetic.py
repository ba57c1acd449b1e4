"""A device mode's arithmetic as an ops wrapper, and as the op-level evaluator's :class:`Arith`.

The one place a numerics profile becomes the ops namespace that computes with it: the profile's
emulating ops, with the matrix unit's block-FMA model where the mode names one (``matrix_unit``),
or XLA's multi-pass bf16 products where it asks for them (``bf16_passes``). The DL primitives'
audit and the op-level evaluator (users' ONNX models and JAX functions) both take it from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hwbench.core.errors import UnavailableError, UsageError

if TYPE_CHECKING:
    from hwbench.accuracy.numerics.profile import NumericsProfile
    from hwbench.core.plugins import Registry
    from hwbench.evaluator.arith import Arith

FLOAT_KINDS = ("cpu", "gpu", "tpu", "ipu", "lpu")
"""Device kinds with floating-point arithmetic (a neuromorphic chip runs spiking networks only)."""


def ops_wrapper(profile: NumericsProfile | None, seed: int = 0, *, unit_backend: str = "numpy") -> Any:
    """The ops wrapper of a profile (None: native arithmetic, no wrapper). ``unit_backend``: the
    backend of a block-FMA matrix unit's model (the same bits on each; JAX's compiled GEMM is
    about 4x faster once compiled, numpy's needs no compilation per shape)."""
    if profile is None:
        return None
    if "matrix_unit" in profile.parameters:  # tensor cores on their block-FMA model (h100, a100 modes)
        from hwbench.plugins.devices._matrix_unit_ops import MatrixUnitWrapper, profile_unit

        unit = profile_unit(profile)
        assert unit is not None
        return MatrixUnitWrapper(profile, unit.with_backend("jax" if unit_backend == "jax" else "numpy"), seed=seed)
    passes = int(profile.parameters.get("bf16_passes", 1))
    if passes > 1:
        from hwbench.plugins.devices.tpu import Bf16PassWrapper

        return Bf16PassWrapper(profile, passes, str(profile.parameters.get("bf16_split", "truncate")))
    from hwbench.accuracy.numerics.emulate import emulating_ops

    return emulating_ops(profile, counters=False, seed=seed)


def float_device_refusal(registry: Registry, name: str, what: str) -> str | None:
    """Why device ``name`` cannot compute ``what`` (a float graph), or None when it can."""
    device = registry.device(name)
    if device.spec.kind in FLOAT_KINDS:
        return None
    takes = sorted(n for n in registry.devices if registry.device(n).spec.kind in FLOAT_KINDS)
    return (
        f"device '{name}' ({device.spec.kind}) has no floating-point arithmetic to run {what} on: it runs spiking "
        f"networks (its kernels: the LIF family); devices that can: {', '.join(takes)}"
    )


def device_arith(
    registry: Registry,
    name: str,
    mode: str | None = None,
    *,
    backend: str = "jax",
    profile: NumericsProfile | None = None,
    seed: int = 0,
    what: str = "a model",
) -> Arith:
    """The arithmetic of device ``name`` in ``mode`` (its default mode when None) for the op-level
    evaluator; ``profile`` replaces the mode's (``--set`` overrides, a sweep's cell). The CPU's is
    native float32. A device without float arithmetic is refused (exit 4, with its reason)."""
    from hwbench.core.engines.jax_engine import JaxOps
    from hwbench.core.engines.numpy_engine import NumpyOps
    from hwbench.evaluator.arith import Arith

    refusal = float_device_refusal(registry, name, what)
    if refusal:
        raise UnavailableError(refusal)
    device = registry.device(name)
    mode = mode or device.default_mode
    if mode not in device.modes:
        raise UsageError(f"unknown mode '{mode}' of device '{name}'; choose from: {', '.join(device.modes)}")
    if profile is None:
        profile = device.numerics(mode)
    carrier = profile.carrier if profile is not None else "float32"
    raw = JaxOps(carrier) if backend == "jax" else NumpyOps(carrier)
    wrapper = ops_wrapper(profile, seed, unit_backend=backend)  # a compiled program's unit compiled too
    ops = wrapper(raw) if wrapper is not None else raw
    label = f"{name}:{mode}" + (f" ({profile.name})" if profile is not None else " (native IEEE)")
    return Arith(ops, backend, label=label)
