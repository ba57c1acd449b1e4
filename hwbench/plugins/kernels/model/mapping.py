"""A candidate's precision map: the search (:mod:`.precision_map`) run with the evaluator, checked
by a rerun, and its cost."""

from __future__ import annotations

from collections.abc import Sequence

from hwbench.core.audit_report import PrecisionMap
from hwbench.plugins.kernels.model import candidate as cand
from hwbench.plugins.kernels.model.baselines import Baselines
from hwbench.plugins.kernels.model.precision_map import matrix_flops, search, shapes_of
from hwbench.plugins.kernels.model.runs import ModelRun, evaluator_run

SEARCH_BACKEND = "numpy"
"""The search evaluates the model once per tried set: on numpy, which compiles nothing per set."""


def precision_map(prep: cand.Prepared, base: Baselines, target: cand.Target, run: ModelRun) -> PrecisionMap:
    """The nodes to keep at ``target.wider_mode`` so that the outputs pass, checked by a rerun on
    the audit's own backend."""
    assert target.wider_mode is not None
    graph, feeds, settings = prep.model.graph, prep.feeds, prep.settings
    narrow = target.arith(SEARCH_BACKEND)
    wide = target.arith(SEARCH_BACKEND, target.wider_mode)
    order = [info.name for info in graph.infos if any(o in run.tensors for o in info.outputs)]

    def passes(keep: Sequence[str]) -> bool:
        trial = evaluator_run(graph, narrow, feeds, intermediates=False, overrides=dict.fromkeys(keep, wide))
        return cand.judge_run(trial, base, settings).verdict.value == "PASS"

    found = search(order, passes)
    overrides = cand.overrides_for(target, settings.backend, tuple(found.keep))
    check = evaluator_run(graph, target.arith(settings.backend), feeds, intermediates=False, overrides=overrides)
    verdict = cand.judge_run(check, base, settings).verdict
    flops = matrix_flops(graph, shapes_of(graph, run.tensors, feeds))
    total = sum(flops.values())
    kept = sum(flops.get(n, 0.0) for n in found.keep)
    method = "bisection over the nodes in graph order, then a greedy pass removing nodes (Polygraphy's debug precision)"
    if not found.found:
        method = f"every node kept at {target.wider_mode} still does not pass: no map of this mode can"
    return PrecisionMap(
        wider_mode=target.wider_mode,
        keep_wider=[n for n in order if n in set(found.keep)],
        verdict=verdict,
        flops_share=float(kept / total) if total else 0.0,
        nodes_share=len(found.keep) / max(len(order), 1),
        evaluations=found.evaluations + 1,
        method=method,
    )
