"""``djsb calibrate --resume`` and the calibration's directory, its report and its errors, without a
cluster: Slurm's commands answered by a scripted transport in squeue's and sacctmgr's formats."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from support import ScriptedTransport, fail, ok

from djsb.calibrate.compare import compare, per_job
from djsb.calibrate.run_dir import CalibrationDir, ledger_name, submitted_any
from djsb.calibrate.slurm_side import CommandDenied, ask
from djsb.calibrate.spec import load_calibration
from djsb.cli import main
from djsb.errors import InputError
from djsb.harness.ledger import CANCELLED, read_entries
from djsb.harness.runlock import RunDirectoryInUse
from djsb.report.calibration import write_calibration_html
from job_modules.slurm.module import SlurmJobModule

FIXTURES = Path(__file__).parent / "fixtures" / "calibrate"


def small_config(tmp_path: Path) -> Path:
    config = tmp_path / "small.yaml"
    config.write_text(f"workload: {{swf: {FIXTURES / 'small.swf'}}}\nslurm: {{partition: oversub, runs: 2}}\n")
    return config


def replay(ids: dict[int, str]) -> pd.DataFrame:
    """A finished replay's table: job -> Slurm id, every job 10 s long."""
    return pd.DataFrame({"job_id": list(ids), "slurm_id": list(ids.values()), "submit": 0.0, "start": 1.0,
                         "end": 11.0}).set_index("job_id")


def test_resume_cancels_what_the_interrupted_replay_left_and_keeps_finished_ones(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    jobs = load_calibration(config).jobs
    out = tmp_path / "out"
    out.mkdir()
    first = CalibrationDir.create(out, config, 2, jobs)
    # replay 1 finished (Slurm jobs 101, 102); replay 2 submitted job 1 as 201 and job 2, whose
    # sbatch never answered, before a SIGKILL
    first.submitting("t1", ledger_name(1, 1))
    first.submitted("t1", ledger_name(1, 1), "101")
    first.submitting("t2", ledger_name(1, 2))
    first.submitted("t2", ledger_name(1, 2), "102")
    logged = "[2026-11-29T00:00:01.000] sched: Allocate JobId=101 NodeList=n1 #CPUs=1 Partition=p\n"
    first.save_run(1, replay({1: "101", 2: "102"}), {"passes": pd.DataFrame({"run": [1]})}, logged)
    assert (out / "slurmctld_1.log").read_text() == logged  # its instants can be read again
    first.submitting("t3", ledger_name(2, 1))
    first.submitted("t3", ledger_name(2, 1), "201")
    first.submitting("t4", ledger_name(2, 2))
    with pytest.raises(RunDirectoryInUse):  # the killed client's lock, held here by `first`
        CalibrationDir.resume(out)
    first.release()
    assert submitted_any(out)

    resumed = CalibrationDir.resume(out)
    assert resumed.attempt == 2 and resumed.runs == 2 and resumed.config == config.resolve()
    resumed.check_jobs(jobs)
    # squeue of the tagged jobs: 101 ended long ago; 201 runs; job 2's submission created 202
    tagged = "101|COMPLETED|djsb-t1\n201|RUNNING|djsb-t3\n202|PENDING|djsb-t4\n"
    transport = ScriptedTransport([("squeue", ok(tagged)), ("scancel", ok())])
    cancelled = resumed.cancel_left_behind(SlurmJobModule({}, transport))
    assert [(s.name, s.job_id) for s in cancelled] == [("run2/cal1", "201"), ("run2/cal2", "202")]
    assert [c for c in transport.commands if c.startswith("scancel")] == ["scancel 201", "scancel 202"]
    assert [(e.token, e.job_id, e.attempt) for e in read_entries(out / "ledger.csv") if e.event == CANCELLED] == [
        ("t3", "201", 2), ("t4", "202", 2)]
    assert list(resumed.finished_runs()) == [1]
    # a second look finds nothing left: the cancelled are in the ledger
    again = ScriptedTransport([("squeue", ok(tagged.replace("RUNNING", "CANCELLED")))])
    assert resumed.cancel_left_behind(SlurmJobModule({}, again)) == []

    with pytest.raises(InputError, match="gives other jobs"):
        resumed.check_jobs(jobs[1:])


def test_a_new_calibration_never_reuses_a_calibration_directory(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    jobs = load_calibration(config).jobs
    CalibrationDir.create(tmp_path, config, 1, jobs).release()
    with pytest.raises(InputError, match="already holds a calibration"):
        CalibrationDir.create(tmp_path, config, 1, jobs)


@pytest.mark.parametrize(("argv", "message"), [
    (["calibrate"], "give a calibration file, or --resume RUN_DIR"),
    (["calibrate", "--resume", "{tmp}/none"], "/none is not a directory"),
    (["calibrate", "x.yaml", "--resume", "{tmp}"], "--resume RUN_DIR takes no CONFIG, -o, --runs or --force: "
                                                  "they are the calibration's"),
])
def test_resume_errors_are_one_line_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 argv: list[str], message: str) -> None:
    assert main([arg.format(tmp=tmp_path) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and message in err, err


def test_a_denied_command_is_one_line_naming_it_and_its_use() -> None:
    transport = ScriptedTransport([("sshare", fail("sshare: error: Access/permission denied\n"))])
    with pytest.raises(CommandDenied) as denied:
        ask(SlurmJobModule({}, transport), ("sshare", "--all", "--noheader"), "the fair-share usage")
    assert str(denied.value) == ("sshare --all --noheader failed (sshare: error: Access/permission denied); "
                                 "the calibration needs it for the fair-share usage")


def test_report_shows_both_sides_the_spread_and_slurms_answers(tmp_path: Path) -> None:
    # three jobs; the model swaps the last two; run 2 starts job 3 five seconds late
    slurm_1 = pd.DataFrame({"job_id": [1, 2, 3], "submit": [0.0, 0.0, 0.0], "start": [0.0, 10.0, 20.0],
                            "end": [10.0, 20.0, 30.0]}).set_index("job_id")
    model = slurm_1.assign(start=[0.0, 20.0, 10.0])
    slurm_2 = slurm_1.assign(start=[0.0, 10.0, 25.0])
    replays = {"slurm_1": slurm_1, "model": model, "slurm_2": slurm_2}
    comparisons = {"model vs slurm_1": compare(slurm_1, model).as_dict(),
                   "slurm_2 vs slurm_1": compare(slurm_1, slurm_2).as_dict()}
    # tau-b of (0, 10, 20) against (0, 20, 10): 2 concordant, 1 discordant pair: 1/3
    assert comparisons["model vs slurm_1"]["tau"] == pytest.approx(1 / 3)
    usage = pd.DataFrame([{"user": "root", "account": "cal_a", "slurm_before": 0.0, "slurm_after": 30.0,
                           "slurm_accrued": 30.0, "model_after": 30.0, "model_accrued": 30.0, "difference": 0.0}])
    page = write_calibration_html(tmp_path, comparisons=comparisons, jobs=per_job(replays), usage=usage,
                                  notes=["a note"], slurm_texts={"show_config": "PriorityType = priority/multifactor"},
                                  scheduler={"bf_interval": 5.0}, priority="multifactor").read_text()
    assert "<td>model vs slurm_1</td><td>3</td><td>0.333</td>" in page
    # mean waits 10 s and (0+10+25)/3 = 11.7 s: +16.7 %
    assert "<td>slurm_2 vs slurm_1</td><td>3</td><td>1.000</td><td>1.7</td><td>0.0</td><td>5.0</td><td>10.0</td>" \
           "<td>11.7</td><td>+16.7%</td>" in page
    assert "PriorityType = priority/multifactor" in page and "cal_a" in page and "a note" in page
    assert 'src="timeline.png"' not in page  # no figure drawn here: none claimed
    assert per_job(replays)["start_error_slurm_2"].tolist() == [0.0, 0.0, 5.0]
