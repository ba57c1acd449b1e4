"""A traced function and its compiled programs, kept for the next call with the same argument shapes.

``jax.jit`` keeps a function's compiled program per argument shapes; so does this, for the op-level
evaluator's programs (the float64 reference, the fp32 floor, each device's arithmetic), so that a
precision test that calls ``assert_device_close`` once per hypothesis example traces and compiles
once. The key is the function object, the arguments' tree, shapes and dtypes, and what the program
computes with; as with ``jax.jit``, a function whose behaviour changes through state it closes over
is not traced again. At most :data:`MAX_PROGRAMS` functions are kept (the oldest go first).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hwbench.evaluator.arith import Arith
    from hwbench.evaluator.jaxpr.program import FunctionProgram
    from hwbench.evaluator.records import Evaluation

MAX_PROGRAMS = 16
Compiled = Callable[[Sequence[np.ndarray]], "Evaluation"]

_programs: OrderedDict[Hashable, FunctionProgram] = OrderedDict()
_compiled: dict[tuple[int, Hashable, bool], Compiled] = {}


def program_for(fn: Callable[..., Any], args: Sequence[Any]) -> FunctionProgram:
    """``fn`` traced at arguments shaped like ``args`` (traced again only for new shapes)."""
    import jax

    from hwbench.evaluator.jaxpr.program import FunctionProgram

    leaves, tree = jax.tree_util.tree_flatten(tuple(args))
    try:
        key: Hashable = (fn, tree, tuple((np.shape(x), np.asarray(x).dtype.str) for x in leaves))
        hash(key)
    except (TypeError, ValueError):  # an unhashable callable, leaves numpy cannot read: no caching
        return FunctionProgram(fn, args)
    found = _programs.get(key)
    if found is not None:
        _programs.move_to_end(key)
        return found
    program = FunctionProgram(fn, args)
    _programs[key] = program
    while len(_programs) > MAX_PROGRAMS:
        _, old = _programs.popitem(last=False)
        for k in [k for k in _compiled if k[0] == id(old)]:
            del _compiled[k]
    return program


def compiled_for(program: FunctionProgram, key: Hashable, arith: Callable[[], Arith], intermediates: bool) -> Compiled:
    """``program`` compiled for the arithmetic ``key`` names (made by ``arith()`` the first time)."""
    slot = (id(program), key, intermediates)
    found = _compiled.get(slot)
    if found is None or not any(p is program for p in _programs.values()):
        found = program.compile(arith(), intermediates=intermediates)
        if any(p is program for p in _programs.values()):
            _compiled[slot] = found
    return found
