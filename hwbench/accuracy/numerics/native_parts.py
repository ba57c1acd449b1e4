"""What an emulated run computes natively by design, not with the device's arithmetic.

The emulation rounds every operation on a run-time value: the state and the kernel's inputs, which
change between calls (:mod:`hwbench.accuracy.numerics.emulate`). A few things stay native on
purpose, because the chip would not compute them either or because nothing is known to model:
arithmetic among compile-time constants (the device's compiler folds it on the host), the op
classes a profile does not describe, and an engine's own functions outside the ops interface.
:func:`native_parts` names them for one profile, so that an audit report says what its emulated
runs did not emulate instead of leaving it to the documentation.
"""

from __future__ import annotations

from hwbench.accuracy.numerics.profile import NumericsProfile
from hwbench.core.ops import OpClass

__all__ = ["native_parts"]


def native_parts(profile: NumericsProfile) -> list[str]:
    """One sentence per part of a run under ``profile`` that is not the device's arithmetic, and why."""
    carrier = f"IEEE {profile.carrier}"
    parts = [
        "arithmetic among compile-time constants alone (Python numbers and the workload's parameters, "
        "with neither the state nor an input involved): folded by the device's compiler on the host, "
        f"so computed in {carrier}; anything touching the state or an input, and every ops.* call, "
        "is emulated"
    ]
    div = profile.ops.get(OpClass.DIV)
    if div is not None and div.lowering == "constant-reciprocal":
        parts.append(
            f"x / c with c a compile-time constant: the reciprocal fl(1/c) is folded in {carrier} "
            "(lowering constant-reciprocal), the product x * fl(1/c) is emulated"
        )
    missing = [c.value for c in OpClass if c is not OpClass.FMA and c not in profile.ops]
    if missing:
        parts.append(f"op classes the profile does not describe ({', '.join(missing)}): {carrier} arithmetic")
    parts.append("functions an engine offers outside the ops interface (hwbench.core.ops.Ops): the engine's own")
    return parts
