"""Verdict rules, hard checks and the stress stimulus."""

import math

import numpy as np
import pytest

from hwbench.accuracy.checks import explain, row_rules, state_checker
from hwbench.accuracy.verdict import Verdict, combine, floor, judge, regime
from hwbench.cli.common import parse_sizes
from hwbench.core.errors import UsageError
from hwbench.core.plugins import load_registry
from hwbench.plugins.kernels.io_ehh import IoEhhKernel
from hwbench.stress.stimulus import spike_stress

IO = IoEhhKernel.info


def metrics(dev=0.01, vr=0.1, count=0, matched=1.0):
    return {
        "deviation": {"max": dev, "max_outside_spikes": dev},
        "spikes": {"van_rossum_mean": vr, "count_diff_total": count, "matched_fraction": matched},
    }


def test_regime_from_ensemble_spread():
    assert regime([metrics(0.01), metrics(0.02)]) == "trajectory-stable"
    assert regime([metrics(30.0, matched=0.8)]) == "chaotic"


def test_judge_thresholds_in_stable_regime():
    fl = floor([metrics(0.01), metrics(0.02)])
    assert fl["max_outside_spikes"] == 0.02
    assert judge(metrics(0.1), None, fl, "trajectory-stable")[0] is Verdict.PASS  # 5x
    assert judge(metrics(1.0), None, fl, "trajectory-stable")[0] is Verdict.WARN  # 50x
    assert judge(metrics(5.0), None, fl, "trajectory-stable")[0] is Verdict.FAIL  # 250x


def test_floor_never_below_absolute_minimum():
    fl = floor([metrics(0.0, vr=0.0)])
    assert fl["max_outside_spikes"] == 1e-3 and fl["van_rossum_mean"] == 0.05
    assert judge(metrics(0.005), None, fl, "trajectory-stable")[0] is Verdict.PASS


def test_chaotic_regime_judges_spikes_too():
    fl = floor([metrics(20.0, vr=1.0, count=4, matched=0.9)])
    assert judge(metrics(25.0, vr=1.5, count=5, matched=0.88), None, fl, "chaotic")[0] is Verdict.PASS
    verdict, score, reasons = judge(metrics(25.0, vr=50.0, count=5, matched=0.88), None, fl, "chaotic")
    assert verdict is Verdict.FAIL and score == pytest.approx(50.0) and "van Rossum" in reasons[0]


def test_any_hard_check_violation_fails():
    verdict, score, reasons = judge(metrics(0.0), {"kind": "non-finite value"}, floor([]), "trajectory-stable")
    assert verdict is Verdict.FAIL and math.isinf(score) and "hard check" in reasons[0]
    assert combine([Verdict.PASS, Verdict.WARN]) is Verdict.WARN
    assert combine([Verdict.WARN, Verdict.FAIL, Verdict.PASS]) is Verdict.FAIL


@pytest.fixture(scope="module")
def io_ehh():
    return load_registry(entry_point_plugins=False).kernel("io-ehh")


def test_row_rules_follow_state_names(io_ehh):
    rules = row_rules(io_ehh.info.state_names)
    kinds = {io_ehh.info.state_names[i]: r.kind for i, r in rules.items()}
    assert kinds["V_soma"] == kinds["V_axon"] == kinds["V_dend"] == "voltage"
    assert kinds["dend_Ca"] == "concentration" and kinds["soma_k"] == "gate"


def test_state_checker_finds_first_violation(io_ehh):
    check = state_checker(io_ehh)
    state = io_ehh.make_workload(64, seed=1).state0.astype(np.float32)
    assert check(state) is None
    bad = state.copy()
    bad[5, 17] = np.nan
    found = check(bad)
    assert found["kind"] == "non-finite value" and found["cell"] == 17 and found["variable"] == "soma_x"
    bad = state.copy()
    bad[3, 2] = 1.01
    assert check(bad)["kind"] == "gating variable outside [0, 1]"
    bad = state.copy()
    bad[10, 4] = -1e-3
    assert check(bad)["kind"] == "negative concentration"
    bad = state.copy()
    bad[9, 0] = 400.0
    assert check(bad)["variable"] == "V_dend"


def test_explanation_names_the_singularity():
    text = explain(
        {
            "t_ms": 5231.0,
            "cell": 17,
            "variable": "soma_x",
            "kind": "non-finite value",
            "value": float("nan"),
            "counters": {"div.nonfinite": 1},
            "cell_state_before": {"V_soma": -25.0001},
        }
    )
    assert text.startswith("t = 5.231 s, cell 17, soma_x")
    assert "removable singularity" in text and "0/0" in text


def test_spike_stress_follows_the_protocol():
    sc = spike_stress(IO, seed=3)
    assert sc.size == 64 and sc.connected and sc.total_ms == 5000 + 10 * 1000
    assert [s.ms for s in sc.segments[:3]] == [5000, 50, 950]
    g = sc.overrides["g_CaL"]
    assert g.min() >= 0.5 and g.max() <= 1.4
    pulses = [s.inputs["I_app"] for s in sc.segments[1::2]]
    assert len(pulses) == 10
    for p in pulses:
        assert 0 < np.count_nonzero(p) <= 21  # a third of 64, drawn with replacement
    assert all(not s.inputs["I_app"].any() for s in sc.segments[2::2])
    again = spike_stress(IO, seed=3)
    assert all(np.array_equal(a.inputs["I_app"], b.inputs["I_app"]) for a, b in zip(sc.segments, again.segments))
    assert not np.array_equal(spike_stress(IO, seed=4).overrides["g_CaL"], g)
    assert spike_stress(IO, quick=True).reduced


def test_parse_sizes():
    assert parse_sizes("4..6,10", cube=True) == [64, 125, 216, 1000]
    assert parse_sizes("729, 8000", cube=False) == [729, 8000]
    for bad in ("", "a", "5..2", "0"):
        with pytest.raises(UsageError):
            parse_sizes(bad, cube=True)


def test_reversed_sum_order_reverses_each_cells_junctions_and_stays_pass_major() -> None:
    from hwbench.accuracy.audit import reversed_sum_order
    from hwbench.core.layout import pass_plan
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    wl = IoEhhKernel().make_workload(64, connected=True, seed=3)
    rev = reversed_sum_order(wl)
    assert pass_plan(rev.arrays["tgt"], 64).is_pass_major
    for cell in range(64):
        forward = wl.arrays["src"][wl.arrays["tgt"] == cell]
        np.testing.assert_array_equal(rev.arrays["src"][rev.arrays["tgt"] == cell], forward[::-1])


def test_published_protocols_default_to_the_study_seed() -> None:
    """Validation, spike stress, the audit and bench run on the study's network unless told otherwise."""
    from hwbench.accuracy.audit import AuditSettings
    from hwbench.accuracy.validation import validation
    from hwbench.core.bench import STUDY_SEED, BenchPlan

    assert STUDY_SEED == 42
    seeds = {validation(IO).seed, spike_stress(IO).seed, AuditSettings(IO.name).seed, BenchPlan(IO.name).seed}
    assert seeds == {STUDY_SEED}
    assert spike_stress(IO, seed=7).seed == 7  # and --seed still chooses another


def test_forensics_name_the_grid_index_beside_the_cell_number() -> None:
    """io-ehh numbers cells by partner count; a located violation also gives the grid index."""
    from hwbench.accuracy.audit import with_grid_index
    from hwbench.plugins.kernels.io_ehh import IoEhhKernel

    wl = IoEhhKernel().make_workload(64, seed=42)
    found = {"cell": 10, "explanation": "t = 5 s, cell 10, soma_x: non-finite value (nan)"}
    out = with_grid_index(found, wl)
    grid = int(wl.annotations["position"][10])
    assert out["cell_grid_index"] == grid == 47 and out["cell"] == 10  # the cell docs/reproduction.md names
    assert out["explanation"].startswith(f"t = 5 s, cell 10 (grid index {grid}), soma_x")
    unconnected = IoEhhKernel().make_workload(64, connected=False, seed=42)
    assert with_grid_index(found, unconnected) == found  # no renumbering, nothing to add
