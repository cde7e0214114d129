"""``djsb compare`` on ``djsb history`` outputs: a what-if beside the baseline replay of the same
record, the baseline's own error against the record as the uncertainty."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from test_cli_errors import one_line_failure
from test_history import SMALL_CONF, SMALL_DUMP

from djsb.cli import main
from djsb.history.compare import figure_changes

FIGURES = {"recorded_mean_wait": 100.0, "simulated_mean_wait": 120.0, "mean_abs_start_error": 30.0,
           "moving_average_mape": 0.2, "ks_wait": 0.1, "pass_agreement": 0.9}


def test_a_change_is_judged_against_the_baselines_error_on_the_record() -> None:
    # the baseline's mean wait is 20 s above the record's: a change of 10 s is within that error,
    # one of 30 s beyond it; figures the record does not have carry no error
    within = {row["figure"]: row for row in figure_changes(FIGURES, {**FIGURES, "simulated_mean_wait": 130.0})}
    assert (within["simulated_mean_wait"]["change"], within["simulated_mean_wait"]["baseline_error"],
            within["simulated_mean_wait"]["beyond_error"]) == (10.0, 20.0, False)
    beyond = {row["figure"]: row for row in figure_changes(FIGURES, {**FIGURES, "simulated_mean_wait": 90.0})}
    assert (beyond["simulated_mean_wait"]["change"], beyond["simulated_mean_wait"]["beyond_error"]) == (-30.0, True)
    assert within["ks_wait"]["beyond_error"] is None and within["ks_wait"]["change"] == 0.0


def test_compare_a_what_if_with_its_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "dump.txt").write_text(SMALL_DUMP)
    (tmp_path / "slurm.conf").write_text(SMALL_CONF)
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"), "-q",
                 "--window", "60", "--step", "10", "--set", "SchedulerType=sched/builtin", "-o", str(out)]) == 0
    compared = tmp_path / "compared"
    assert main(["compare", str(out), str(out / "what-if"), "-o", str(compared)]) == 0
    assert "simulated_mean_wait" in capsys.readouterr().out
    table = pd.read_csv(compared / "compare.csv", dtype={"group": str}).set_index(["group_by", "group", "figure"])
    base = pd.read_csv(out / "errors.csv").set_index("job_id")
    what_if = pd.read_csv(out / "what-if" / "errors.csv").set_index("job_id")
    overall = table.loc[("all", "all", "simulated_mean_wait")]
    assert overall["baseline"] == pytest.approx(base["simulated_wait"].mean())
    assert overall["what_if"] == pytest.approx(what_if["simulated_wait"].mean())
    # the record's waits: 0, 99 and 3 s
    assert overall["baseline_error"] == pytest.approx(base["simulated_wait"].mean() - 34.0)
    assert bool(overall["beyond_error"]) == (abs(overall["change"]) > abs(overall["baseline_error"]))
    # job 3 (1 CPU) alone in its size class, recorded wait 3 s
    alone = table.loc[("size", "1", "simulated_mean_wait")]
    assert alone["baseline_error"] == pytest.approx(base.loc[3, "simulated_wait"] - 3.0)
    assert alone["change"] == pytest.approx(what_if.loc[3, "simulated_wait"] - base.loc[3, "simulated_wait"])
    page = (compared / "report.html").read_text()
    assert 'src="moving_average.png"' in page and (compared / "moving_average.png").stat().st_size > 0


def fake_history(path: Path, starts: list[float]) -> Path:
    """The files of a history output, with the recorded starts of jobs 1, 2, ..."""
    path.mkdir()
    pd.DataFrame({"job_id": range(1, len(starts) + 1), "recorded_start": starts}).to_csv(path / "errors.csv",
                                                                                         index=False)
    pd.DataFrame([{"group_by": "all", "group": "all", **FIGURES}]).to_csv(path / "summary.csv", index=False)
    pd.DataFrame({"instant": [60.0], "recorded": [1.0], "simulated": [1.0], "jobs": [3]}).to_csv(
        path / "moving_average.csv", index=False)
    return path


def test_replays_of_different_records_are_not_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = fake_history(tmp_path / "base", [0.0, 10.0])
    other = fake_history(tmp_path / "other", [0.0, 11.0])
    out = tmp_path / "compared"
    one_line_failure(capsys, ["compare", str(base), str(other), "-o", str(out)], 2,
                     f"RUN_DIR: {base} and {other} replay different records (other jobs or recorded starts): "
                     "their difference would not be the setting's", out)


def test_a_history_is_not_compared_with_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = fake_history(tmp_path / "base", [0.0])
    (tmp_path / "run").mkdir()
    out = tmp_path / "compared"
    one_line_failure(capsys, ["compare", str(base), str(tmp_path / "run"), "-o", str(out)], 2,
                     f"RUN_DIR: {base} is a djsb history output and {tmp_path / 'run'} is not: compare runs with "
                     "runs, histories with histories", out)
    one_line_failure(capsys, ["compare", str(base), str(base), "-o", str(out)], 2,
                     "RUN_DIR: an output is given twice: a replay compared with itself differs in nothing", out)
