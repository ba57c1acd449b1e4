"""``hwbench results`` and recording through the real CLI entry point: exit codes, JSON, the gate."""

from __future__ import annotations

import json

import pytest

from hwbench.cli.main import main
from hwbench.core.bench import STUDY_SEED
from hwbench.store.db import Filters
from tests.store.conftest import bench_doc


def _json(capsys, argv: list[str]) -> tuple[int, object]:
    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out) if out.strip() else None


@pytest.fixture
def pair(store, environment) -> dict[str, int]:
    base = store.record(bench_doc([1.0, 1.01, 0.99, 1.02, 1.0]), environment, ("base",))
    same = store.record(bench_doc([1.01, 0.99, 1.0, 1.0, 1.02], created="2026-01-02T00:00:00+00:00"), environment)
    slow = store.record(bench_doc([1.5, 1.52, 1.49, 1.51, 1.5], created="2026-01-03T00:00:00+00:00"), environment)
    return {"base": base, "same": same, "slow": slow}


def test_gate_exit_codes(pair, capsys) -> None:
    argv = ["results", "compare", str(pair["base"]), str(pair["slow"]), "--fail-above", "10", "--json"]
    rc, report = _json(capsys, argv)
    assert rc == 1 and report["regressions"] == 1
    [t] = report["timings"]
    assert t["method"] == "mann-whitney-u" and t["change"] == "slower" and t["ci_low"] > 1.4
    assert main(["results", "compare", str(pair["base"]), str(pair["slow"]), "--fail-above", "60"]) == 0
    assert main(["results", "compare", str(pair["base"]), str(pair["same"]), "--fail-above", "0"]) == 0
    assert main(["results", "compare", str(pair["base"]), str(pair["slow"])]) == 0  # no gate: report only
    # baseline tag vs the latest result: the slow one
    assert main(["results", "compare", "--baseline-tag", "base", "--fail-above", "10"]) == 1
    assert main(["results", "compare", "--baseline-tag", "base", str(pair["same"]), "--fail-above", "10"]) == 0


def test_usage_errors_exit_2(pair, capsys) -> None:
    assert main(["results", "compare", str(pair["base"]), "999"]) == 2
    assert "no result '999'" in capsys.readouterr().err
    assert main(["results", "compare", str(pair["base"])]) == 2
    assert main(["results", "list", "--since", "yesterday"]) == 2
    assert "ISO date" in capsys.readouterr().err
    assert main(["results", "compare", str(pair["base"]), str(pair["slow"]), "--fail-above", "-1"]) == 2


def test_list_show_export_import(pair, capsys, tmp_path, monkeypatch) -> None:
    rc, rows = _json(capsys, ["results", "list", "--tag", "base", "--json"])
    assert rc == 0 and [r["id"] for r in rows] == [pair["base"]]
    rc, shown = _json(capsys, ["results", "show", str(pair["slow"]), "--json"])
    assert shown["document"]["timings"][0]["run_s_all"][0] == 1.5 and shown["environment"]["python"]
    out = tmp_path / "export.json"
    assert main(["results", "export", "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())["records"]) == 3
    monkeypatch.setenv("HWBENCH_STORE", str(tmp_path / "second.sqlite"))
    assert main(["results", "import", str(out), "--tag", "imported"]) == 0
    assert main(["results", "import", str(out)]) == 0
    assert "skipped 3 already present" in capsys.readouterr().err
    rc, rows = _json(capsys, ["results", "list", "--tag", "imported", "--json"])
    assert len(rows) == 3
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["results", "import", str(bad)]) == 2


def test_run_records_once_and_no_store_records_nothing(store, capsys) -> None:
    argv = ["run", "--cells", "64", "--ms", "5", "--repeats", "3", "--tag", "ci-check"]
    assert main(argv) == 0
    assert "recorded as result" in capsys.readouterr().err
    [rec] = store.list(Filters(tag="ci-check"))
    full = store.get(rec.id)
    assert full.kind == "run" and full.size == 64 and len(full.document["timing"]["run_s_all"]) == 3
    assert "traces" not in full.document  # bulk arrays stay in the result file
    assert full.environment.devices[0].device == "cpu" and full.environment.seeds == [STUDY_SEED]  # the default seed
    assert main([*argv, "--no-store"]) == 0
    assert len(store.list(Filters(tag="ci-check"))) == 1


def test_unwritable_store_warns_and_the_command_still_succeeds(tmp_path, monkeypatch, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("HWBENCH_STORE", str(blocker / "sub" / "results.sqlite"))  # parent is a file
    out = tmp_path / "run.json"
    assert main(["run", "--cells", "64", "--ms", "5", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "result not recorded" in err and "Traceback" not in err
    assert json.loads(out.read_text())["schema"] == "hwbench.run/1"


def test_unreachable_server_exits_4(capsys) -> None:
    url = "postgresql://nobody@/db?host=/nonexistent-socket-dir&port=1"
    assert main(["results", "--store", url, "list"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("error: cannot open the results store postgresql+psycopg://") and len(err.splitlines()) == 1


def test_audit_compare_gives_accuracy_deltas_and_gates_on_a_worse_verdict(store, environment, capsys) -> None:
    from pathlib import Path

    real = json.loads((Path(__file__).parents[1] / "data" / "audit_report_tpu_v3_quick.json").read_text())
    worse = json.loads(json.dumps(real))
    [protocol] = worse["protocols"]
    candidate = next(r for r in protocol["runs"] if r["role"] == "candidate")
    before = candidate["deviation"]["max"]
    candidate["deviation"]["max"] = before + 2.5
    protocol["verdicts"][0]["verdict"] = "FAIL"
    a, b = store.record(real, environment), store.record(worse, environment)
    rc, report = _json(capsys, ["results", "compare", str(a), str(b), "--fail-above", "0", "--json"])
    assert rc == 1 and report["regressions"] == 1
    [verdict] = report["verdicts"]
    assert (verdict["device"], verdict["verdict_a"], verdict["verdict_b"], verdict["regression"]) == (
        "tpu-v3",
        "PASS",
        "FAIL",
        True,
    )
    deltas = {d["label"]: d for d in report["accuracy"]}
    assert deltas[candidate["label"]]["max_dv_delta"] == pytest.approx(2.5)
    assert deltas["gold (CPU fp64)"]["max_dv_delta"] == 0.0
    assert main(["results", "compare", str(b), str(a), "--fail-above", "0"]) == 0  # FAIL -> PASS: better


def test_list_and_compare_say_whose_times_they_are(store, environment, capsys) -> None:
    """An emulated result's times are this host's: the listing and the comparison have an execution
    column and say so in words."""
    real = store.record(bench_doc([1.0, 1.01, 0.99]), environment)
    emulated = bench_doc([2.0, 2.1, 1.9], device="groq", mode="default", execution="emulated",
                         created="2026-01-02T00:00:00+00:00")  # fmt: skip
    emul = store.record(emulated, environment)
    assert main(["results", "list"]) == 0
    listing = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert "exec" in listing and "emul." in listing and "real" in listing
    assert "this host's time to emulate the chip, not the chip's own time" in listing
    rc, report = _json(capsys, ["results", "compare", str(real), str(emul), "--json"])
    assert rc == 0 and [t["execution"] for t in report["timings"]] == ["real/emulated"]
    assert main(["results", "compare", str(real), str(emul)]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "exec A/B" in table and "real/emul." in table and "not the chip's own time" in table
    rc, listed = _json(capsys, ["results", "list", "--json"])
    assert {r["id"]: r["execution"] for r in listed} == {real: "real", emul: "emulated"}
