"""``djsb history``: a site's sacct dump replayed offline under its own slurm.conf, against the record.

The dump and slurm.conf are the mini-cluster's own (tests/fixtures/sacct/README.md). The recorded side
is recomputed here from the dump's text with the standard library alone (an oracle that shares no code
with the sacct reader); the simulated side is checked by its invariants (no job starts before its
submission, every replayable job started or counted), not by its own numbers.
"""

from __future__ import annotations

import calendar
import csv
import re
import time
from pathlib import Path

import pandas as pd
import pytest
from test_cli_errors import one_line_failure

from djsb.cli import main
from djsb.history.notes import submit_options, unmodelled
from djsb.model import simulation
from djsb.model.cluster_spec import QosSpec
from djsb.slurmsite.qos_text import QOS_FORMAT
from djsb.slurmsite.slurm_conf import parse_slurm_conf
from djsb.slurmsite.slurm_config import unknown_partition_qos

FIXTURES = Path(__file__).parent / "fixtures" / "sacct"
DUMP = FIXTURES / "minicluster-22.05-allocations.txt"
CONF = FIXTURES / "minicluster-slurm.conf"


def seconds(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def replayed_rows() -> list[dict[str, str]]:
    """The dump's rows of the jobs that ran (cancelled before starting: Start = End, 0 s elapsed)."""
    with DUMP.open() as stream:
        return [row for row in csv.DictReader(stream, delimiter="|")
                if not (row["State"].startswith("CANCELLED") and row["Elapsed"] == "00:00:00")]


def recorded_waits() -> dict[int, float]:
    """JobIDRaw -> Start - Submit of the jobs that ran, from the dump's text."""
    return {int(row["JobIDRaw"]): seconds(row["Start"]) - seconds(row["Submit"]) for row in replayed_rows()}


def test_a_dump_replayed_under_its_slurm_conf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "history"
    assert main(["history", str(DUMP), "--slurm-conf", str(CONF), "--window", "600", "--step", "45",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    # the two partitions no job of the dump ran in, and the two jobs cancelled before they started
    assert "note: partition(s) oversub, exclusive of slurm.conf ran no job of the dump: not modelled" in err
    assert "note: 2 record(s) of the dump are not replayed (2 cancelled_before_start)" in err
    rows = replayed_rows()
    nodelist = sum(1 for row in rows if "--nodelist=" in row["SubmitLine"])
    held = sum(1 for row in rows if seconds(row["Eligible"]) > seconds(row["Submit"]))
    assert (nodelist, held) == (22, 37)
    assert f"note: {nodelist} job(s) asked --nodelist: the model places them on any node" in err
    unmodelled = pd.read_csv(out / "unmodelled.csv")
    assert sorted(unmodelled[unmodelled["option"] == "--nodelist"]["job_id"]) == sorted(
        int(row["JobIDRaw"]) for row in rows if "--nodelist=" in row["SubmitLine"])
    # the tasks of arrays whose SubmitLine throttles them (--array=...%N) are held by their throttle in
    # the replay; the other jobs Slurm held past their submission (array 44's 20 tasks, whose
    # --array=0-19 has no throttle) are queued at their recorded Eligible time
    throttled = [row for row in rows if re.search(r"--array[= ]\S*%\d", row["SubmitLine"])]
    arrays = {row["JobID"].split("_")[0] for row in throttled}
    later = [row for row in rows if seconds(row["Eligible"]) > seconds(row["Submit"]) and row not in throttled]
    assert (len(throttled), len(arrays), len(later)) == (17, 3, 20)
    assert f"note: {len(throttled)} task(s) of {len(arrays)} job array(s) with a throttle (--array ...%N)" in err
    assert f"note: {len(later)} job(s) became eligible after their submission" in err
    waits = recorded_waits()
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    assert len(waits) == 81 and set(errors.index) == set(waits)
    assert errors["recorded_wait"].to_dict() == pytest.approx(waits)
    assert (errors["simulated_start"] >= errors["submit"]).all()
    overall = pd.read_csv(out / "summary.csv").set_index(["group_by", "group"]).loc[("all", "all")]
    assert (overall["jobs"], overall["not_started"]) == (81, 0)
    assert overall["recorded_mean_wait"] == pytest.approx(sum(waits.values()) / 81)
    # every job of this dump ran in partition shared, QoS normal, account root: one group each
    summary = pd.read_csv(out / "summary.csv")
    assert summary[summary["group_by"] == "partition"]["group"].tolist() == ["shared"]
    assert summary[summary["group_by"] == "size"]["jobs"].sum() == 81
    jobs = pd.read_csv(out / "jobs.csv")
    assert set(jobs["job_id"]) == set(waits)
    # the moving averages are sampled every --step (45 s) over --window (600 s) from the first
    # submission plus the window, and summary.csv's MAPE is theirs
    averages = pd.read_csv(out / "moving_average.csv")
    assert (averages["instant"].diff().dropna().round(6) == 45.0).all()
    assert averages["instant"].iloc[0] == pytest.approx(errors["submit"].min() + 600.0)
    mape = (averages["simulated"] - averages["recorded"]).abs() / averages["recorded"]
    assert overall["moving_average_mape"] == pytest.approx(mape[averages["recorded"] > 0].mean())


GPU_DUMP = """\
JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|AllocCPUS|ReqTRES|NNodes|State|Flags|SubmitLine
1|u1|a|g|normal|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:40|00:01:40|00:02:00|1|cpu=1,node=1|1|COMPLETED|SchedMain|sbatch --gres=gpu:a100:1 -t 2 job.sh
2|u1|a|g|normal|2026-01-01T00:00:01|2026-01-01T00:00:01|2026-01-01T00:01:40|2026-01-01T00:01:50|00:00:10|00:05:00|1|cpu=1,gres/gpu=1,node=1|1|COMPLETED|SchedMain|sbatch -t 5 job.sh
3|u1|a|g|normal|2026-01-01T00:00:02|2026-01-01T00:00:02|2026-01-01T00:00:05|2026-01-01T00:00:55|00:00:50|00:01:00|1|cpu=1,node=1|1|COMPLETED|SchedBackfill|sbatch -t 1 job.sh
"""
GPU_CONF = """\
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,sched_interval=60
GresTypes=gpu
NodeName=g1 CPUs=4 RealMemory=1000 Gres=gpu:a100:1
PartitionName=g Nodes=g1 Default=YES MaxTime=INFINITE
"""


@pytest.mark.parametrize("asked", ["cpu=1,gres/gpu=1,node=1", "cpu=1,node=1"], ids=["gpu", "no-gpu"])
def test_gpu_jobs_are_replayed_as_gpu_jobs(tmp_path: Path, asked: str) -> None:
    # One node of 4 CPUs and one a100 (slurm.conf's Gres=, what slurmctld schedules by; gres.conf
    # names no binding, so it adds no note). J1 asks the GPU in its SubmitLine and holds it 0-100 s;
    # J2 asks it only in ReqTRES (an #SBATCH line) and must wait for J1 though 3 CPUs are free; J3
    # asks none and starts at once. Without J2's GPU (the cause removed), J2 starts at once too.
    (tmp_path / "dump.txt").write_text(GPU_DUMP.replace("cpu=1,gres/gpu=1,node=1", asked))
    (tmp_path / "slurm.conf").write_text(GPU_CONF)
    (tmp_path / "gres.conf").write_text("NodeName=g1 Name=gpu Type=a100 Count=1\n")
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"), "-q",
                 "--window", "60", "--step", "10", "-o", str(out)]) == 0
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
    assert "gres" not in (out / "notes.txt").read_text().lower()
    assert errors.loc[3, "simulated_start"] < 10
    if asked.count("gpu"):
        assert jobs.loc[1, "gpus"] == 1 and jobs.loc[2, "gpus"] == 1
        assert errors.loc[2, "simulated_start"] >= errors.loc[1, "simulated_start"] + 100
    else:
        assert errors.loc[2, "simulated_start"] < 10


def second_job_held(tmp_path: Path, dump: str, conf: str, files: dict[str, str]) -> str | None:
    """``djsb history`` on ``dump`` under ``conf`` with ``files`` (option: text): the reason job 2
    waited for job 1's end (100 s) with, or None when it started at once (within 10 s)."""
    (tmp_path / "dump.txt").write_text(dump)
    (tmp_path / "slurm.conf").write_text(conf)
    given = []
    for option, text in files.items():
        path = tmp_path / f"{option.strip('-')}.txt"
        path.write_text(text)
        given += [option, str(path)]
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"), "-q",
                 *given, "--window", "60", "--step", "10", "-o", str(out)]) == 0
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    if errors.loc[2, "simulated_start"] < 10:
        return None
    assert errors.loc[2, "simulated_start"] >= errors.loc[1, "simulated_start"] + 100
    return str(pd.read_csv(out / "jobs.csv").set_index("job_id").loc[2, "reason"])


@pytest.mark.parametrize("grp_tres", ["gres/gpu=1", ""], ids=["GrpTRES", "no-limit"])
def test_a_qos_gpu_limit_from_sacctmgr_holds_a_gpu_job_with_its_reason(tmp_path: Path, grp_tres: str) -> None:
    # Two nodes of 4 CPUs and one a100 each. J1 holds one GPU 0-100 s; J2 asks one and a GPU is free
    # on the other node, but the QoS's GrpTRES gres/gpu=1 (sacctmgr's columns) is used up: J2 waits
    # for J1's end with Slurm's reason QOSGrpGRES (acct_policy.c). Without the limit (the cause
    # removed) it starts at once.
    columns = dict.fromkeys(QOS_FORMAT, "") | {"Name": "normal", "Priority": "0", "GrpTRES": grp_tres}
    conf = GPU_CONF.replace("NodeName=g1 ", "NodeName=g[1-2] ").replace("Nodes=g1", "Nodes=g[1-2]")
    held = second_job_held(tmp_path, GPU_DUMP, conf, {"--qos": "|".join(columns.values()) + "\n"})
    assert held == ("QOSGrpGRES" if grp_tres else None)


@pytest.mark.parametrize("partition_qos", ["QOS=pq", ""], ids=["QOS", "none"])
def test_a_partition_qos_of_slurm_conf_holds_the_jobs_of_its_partition(tmp_path: Path,
                                                                        partition_qos: str) -> None:
    # One node of 3 CPUs; J1 runs 0-100 s and J2 (QoS normal, no limit) is submitted at 1 s. The
    # partition's QOS=pq (slurm.conf), whose GrpJobs 1 sacctmgr's columns give, holds J2 until J1 ends
    # with Slurm's reason QOSGrpJobsLimit (acct_policy.c acct_policy_set_qos_order puts the partition's
    # QoS first, _qos_job_runnable_pre_select). Without QOS= (the cause removed) J2 starts at once.
    conf = SMALL_CONF.replace("MaxTime=INFINITE", f"MaxTime=INFINITE {partition_qos}")
    rows = [dict.fromkeys(QOS_FORMAT, "") | {"Name": name, "Priority": "0", "GrpJobs": jobs}
            for name, jobs in (("normal", ""), ("pq", "1"))]
    held = second_job_held(tmp_path, DEPENDENCY_DUMP.replace("DEPENDENCY", "--comment=none"), conf,
                           {"--qos": "".join("|".join(row.values()) + "\n" for row in rows)})
    assert held == ("QOSGrpJobsLimit" if partition_qos else None)


@pytest.mark.parametrize("grp_jobs", ["1", ""], ids=["GrpJobs", "none"])
def test_an_account_s_grp_jobs_from_sacctmgr_holds_its_jobs(tmp_path: Path, grp_jobs: str) -> None:
    # One node of 3 CPUs; J1 (u1, account a) runs 0-100 s and J2 (u1, a) is submitted at 1 s. Account
    # a's GrpJobs 1 (sacctmgr show associations' fifth column) holds J2 until J1 ends with Slurm's
    # reason AssocGrpJobsLimit (acct_policy.c acct_policy_job_runnable_pre_select's walk up the
    # association tree). Without the limit (the cause removed) J2 starts at once.
    held = second_job_held(tmp_path, DEPENDENCY_DUMP.replace("DEPENDENCY", "--comment=none"), SMALL_CONF,
                           {"--associations": f"root|||1||||||\na||root|1|{grp_jobs}|||||\na|u1||1||||||\n"})
    assert held == ("AssocGrpJobsLimit" if grp_jobs else None)


def test_a_gpu_job_on_a_site_without_gpus_is_refused_with_slurm_s_message(tmp_path: Path) -> None:
    (tmp_path / "dump.txt").write_text(GPU_DUMP)
    (tmp_path / "slurm.conf").write_text(GPU_CONF.replace(" Gres=gpu:a100:1", ""))
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"), "-q",
                 "--window", "60", "--step", "10", "-o", str(out)]) == 0
    rejected = pd.read_csv(out / "rejected.csv").set_index("job_id")
    assert sorted(rejected.index) == [1, 2]
    assert set(rejected["reason"]) == {"Invalid generic resource (gres) specification"}


DEPENDENCY_DUMP = """\
JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|AllocCPUS|NNodes|State|Flags|SubmitLine
1|u1|a|p|normal|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:40|00:01:40|00:02:00|1|1|COMPLETED|SchedMain|sbatch -t 2 job.sh
2|u1|a|p|normal|2026-01-01T00:00:01|Unknown|2026-01-01T00:01:41|2026-01-01T00:01:51|00:00:10|00:05:00|1|1|COMPLETED|SchedMain|sbatch DEPENDENCY -t 5 job.sh
"""


@pytest.mark.parametrize(("asked", "held"), [("--dependency=afterok:1", True), ("-d afterany:1", True),
                                             ("--dependency=afternotok:1", None), ("--dependency=singleton", True),
                                             ("--comment=none", False)])
def test_a_dependency_of_the_submit_line_holds_the_job_in_the_replay(tmp_path: Path, asked: str,
                                                                     held: bool | None) -> None:
    # One node of 2 CPUs: J1 runs 0-100 s; J2 asks a dependency on J1, and its Eligible is not
    # recorded. Enforced (afterok, afterany), J2 starts when J1 ends, though a CPU is free at once;
    # afternotok can never be satisfied by J1's COMPLETED, and J2 is cancelled; singleton holds J2
    # while J1, of its user and name (none: the dump has no JobName), runs (_find_singleton_job); and
    # without a dependency (the cause removed) J2 starts at once.
    (tmp_path / "dump.txt").write_text(DEPENDENCY_DUMP.replace("DEPENDENCY", asked))
    (tmp_path / "slurm.conf").write_text(SMALL_CONF.replace("CPUs=3", "CPUs=2"))
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"), "-q",
                 "--window", "60", "--step", "10", "-o", str(out)]) == 0
    errors = pd.read_csv(out / "errors.csv").set_index("job_id")
    notes = (out / "notes.txt").read_text()
    if held is None:
        rejected = pd.read_csv(out / "rejected.csv")
        assert rejected["job_id"].tolist() == [2]
        assert rejected["reason"].tolist() == ["cancelled: dependency never satisfied (parent 1 COMPLETED)"]
    elif held:
        assert errors.loc[2, "simulated_start"] >= errors.loc[1, "simulated_start"] + 100
        assert "1 job(s) asked --dependency (after, afterok, afterany, afternotok, aftercorr, singleton) on jobs " \
            "of the replay" in notes
        # the reason sacct keeps for such a job (build_job_queue's state_reason_prev_db)
        assert pd.read_csv(out / "jobs.csv").set_index("job_id").loc[2, "sacct_reason"] == "Dependency"
    else:
        assert errors.loc[2, "simulated_start"] < 10
    assert "the model does not enforce" not in notes


def test_the_progress_of_a_replay_ends_with_every_job_done(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # reported every 50 events, the replay of the dump's 81 jobs ends between two reports: its last
    # line still says all of them are done
    monkeypatch.setattr(simulation, "PROGRESS_EVERY", 50)
    assert main(["history", str(DUMP), "--slurm-conf", str(CONF), "--window", "600", "--step", "60",
                 "-o", str(tmp_path / "history")]) == 0
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("djsb: jobs ")]
    assert progress and progress[-1].startswith("djsb: jobs 81/81 (100%), done in ")


def test_a_slurm_conf_that_does_not_parse_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nNodeName=n1 CPUs\n")
    out = tmp_path / "history"
    one_line_failure(capsys, ["history", str(DUMP), "--slurm-conf", str(conf), "-o", str(out)], 2,
                     f"{conf}:2: 'CPUs' is not Key=Value", out)


def test_every_setting_the_model_does_not_reproduce_is_named() -> None:
    conf = parse_slurm_conf(
        "PreemptType=preempt/qos\n"
        "SchedulerParameters=bf_interval=30,bf_max_job_assoc=10,defer\n"
        "GresTypes=gpu,mps\n"
        "NodeName=g[1-2] CPUs=8 Gres=gpu:2 State=UNKNOWN\n"
        "NodeName=d1 CPUs=8 State=DRAIN\n"
        "PartitionName=gpu Nodes=g[1-2] QOS=gpuqos AllowAccounts=lab TRESBillingWeights=CPU=1.0,GRES/gpu=4\n")
    assert unmodelled(conf) == [
        "SchedulerParameters bf_max_job_assoc=10 has no model",
        "GresTypes mps has no model: of the generic resources, only GPUs are placed",
        "node d1 State=DRAIN: the model keeps it in service",
        "partition gpu: AllowAccounts=lab has no model",
    ]
    # a partition's QOS is modelled (djsb/model/qos_order.py) when --qos has it, else left out as
    # slurmctld leaves out a QoS its database lacks (partition_mgr.c "has an invalid qos")
    assert unknown_partition_qos(conf.partitions, [QosSpec("normal")]) == [
        "partition gpu: QOS=gpuqos is none of the QoS read (--qos): its limits are not enforced"]
    assert unknown_partition_qos(conf.partitions, [QosSpec("normal"), QosSpec("gpuqos")]) == []


@pytest.mark.parametrize(("line", "options"), [
    ("sbatch --parsable --nodelist=n2 --time=4 job.sh --exclusive", {"--parsable", "--nodelist", "--time"}),
    ("sbatch -w n[1-2] -p batch -s job.sh", {"--nodelist", "-p", "--oversubscribe"}),
    ("sbatch job.sh", set()),
    ("sbatch --wrap='unbalanced", set()),
])
def test_the_options_of_a_submit_line(line: str, options: set[str]) -> None:
    assert submit_options(line) == options


SMALL_DUMP = """\
JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|AllocCPUS|NNodes|State|Flags
1|u1|a|p|normal|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:01:40|00:01:40|00:02:00|2|1|COMPLETED|SchedMain
2|u1|a|p|normal|2026-01-01T00:00:01|2026-01-01T00:00:01|2026-01-01T00:01:40|2026-01-01T00:01:50|00:00:10|00:05:00|3|1|COMPLETED|SchedMain
3|u1|a|p|normal|2026-01-01T00:00:02|2026-01-01T00:00:02|2026-01-01T00:00:05|2026-01-01T00:00:55|00:00:50|00:01:00|1|1|COMPLETED|SchedBackfill
"""
SMALL_CONF = """\
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,sched_interval=60
NodeName=n1 CPUs=3 RealMemory=1000
PartitionName=p Nodes=n1 Default=YES MaxTime=INFINITE
"""


def test_a_what_if_beside_the_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One node of 3 CPUs. J1 (2 CPUs, limit 120 s) runs 0-100; J2 (3 CPUs) waits for it; J3 (1 CPU,
    # limit 60 s) fits beside J1 and ends before J1's limit, so sched/backfill starts it long before
    # J2. Without backfill (sched/builtin) the main pass stops at J2, and J3 starts only after J2.
    (tmp_path / "dump.txt").write_text(SMALL_DUMP)
    (tmp_path / "slurm.conf").write_text(SMALL_CONF)
    out = tmp_path / "history"
    assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"),
                 "--window", "60", "--step", "10", "--set", "schedulertype=sched/builtin", "-o", str(out)]) == 0
    assert "with SchedulerType=sched/builtin" in capsys.readouterr().out
    base = pd.read_csv(out / "errors.csv").set_index("job_id")
    what_if = pd.read_csv(out / "what-if" / "errors.csv").set_index("job_id")
    assert base.loc[3, "simulated_pass"] == "backfill" and base.loc[3, "simulated_start"] < 100
    assert what_if.loc[3, "simulated_pass"] == "main"
    assert what_if.loc[3, "simulated_start"] >= what_if.loc[2, "simulated_start"] >= 100
    table = pd.read_csv(out / "what-if.csv").set_index("figure")
    mean_wait = table.loc["simulated_mean_wait"]
    assert mean_wait["baseline"] == pytest.approx(base["simulated_wait"].mean())
    assert mean_wait["what_if"] == pytest.approx(what_if["simulated_wait"].mean())
    assert mean_wait["change"] == pytest.approx(mean_wait["what_if"] - mean_wait["baseline"]) and mean_wait["change"] > 0
    # the baseline's own error against the record: its mean wait minus the recorded (0 + 99 + 3) / 3
    assert mean_wait["baseline_error"] == pytest.approx(mean_wait["baseline"] - 34.0)


def test_an_unchanged_what_if_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "history"
    assert main(["history", str(DUMP), "--slurm-conf", str(CONF), "--window", "600", "--step", "60", "-q",
                 "--set", "SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=5",
                 "-o", str(out)]) == 0
    table = pd.read_csv(out / "what-if.csv")
    assert (table["change"] == 0).all()


def test_a_what_if_of_a_setting_the_model_does_not_read_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "history"
    one_line_failure(capsys, ["history", str(DUMP), "--slurm-conf", str(CONF), "--set", "MaxArraySize=10",
                              "-o", str(out)], 2, "--set: 'MaxArraySize=10': expected KEY=VALUE with KEY "
                     "one of the settings the model reads (SchedulerType, SchedulerParameters, SelectType, "
                     "KillWait, OverTimeLimit, ResvOverRun, PreemptType, PreemptMode, SchedulerTimeSlice, PreemptExemptTime, "
                     "JobRequeue, AuthInfo, DefMemPerCPU, DefMemPerGPU, DefMemPerNode, DefCpuPerGPU, "
                     "AccountingStorageEnforce, MaxMemPerCPU, PriorityType, "
                     "PriorityWeightAge, PriorityWeightFairShare, PriorityWeightJobSize, PriorityWeightPartition, "
                     "PriorityWeightQOS, PriorityWeightTRES, PriorityMaxAge, PriorityFavorSmall, PriorityFlags, "
                     "PriorityDecayHalfLife, PriorityCalcPeriod, PriorityUsageResetPeriod)", out)


@pytest.mark.parametrize("option", ["--qos", "--associations"])
def test_a_missing_sacctmgr_file_is_one_line_naming_its_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    out = tmp_path / "history"
    one_line_failure(capsys, ["history", str(DUMP), "--slurm-conf", str(CONF), option, str(tmp_path / "none.txt"),
                              "-o", str(out)], 2, f"{tmp_path / 'none.txt'}: {option}: cannot open: No such file "
                     "or directory", out)


def test_a_history_of_short_jobs_is_noted_for_the_second_sacct_does_not_keep(tmp_path: Path) -> None:
    (tmp_path / "slurm.conf").write_text(SMALL_CONF)
    for name, dump, expected in (
            # runs of 100, 10 and 50 s: two of three under a minute
            ("short", SMALL_DUMP, "2 of the 3 jobs ran under 60 s"),
            # the same jobs ten times longer (Elapsed, End and Timelimit): none
            ("long", SMALL_DUMP.replace("00:01:40|00:02:00", "00:16:40|00:20:00")
             .replace("00:00:10|00:05:00", "00:01:40|00:50:00").replace("00:00:50|00:01:00", "00:08:20|00:10:00"),
             None)):
        (tmp_path / f"{name}.txt").write_text(dump)
        out = tmp_path / name
        assert main(["history", str(tmp_path / f"{name}.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"),
                     "--window", "60", "--step", "10", "-q", "-o", str(out)]) == 0
        notes = (out / "notes.txt").read_text()
        if expected is None:
            assert "ran under" not in notes, notes
        else:
            assert expected in notes and "about a second after the end" in notes, notes


def test_a_bad_earlier_dump_is_one_line_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "before.txt"
    bad.write_text("garbage\n")
    assert main(["history", str(DUMP), "--earlier", str(bad), "--slurm-conf", str(CONF), "-q",
                 "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"djsb: error: {bad}:1: --earlier: no JobID column"), err
    assert not (tmp_path / "out").exists()


def test_a_site_s_qos_preempt_lists_are_what_preempt_qos_goes_by(tmp_path: Path) -> None:
    # One node of 2 CPUs. J1 (QoS standby, GraceTime 3 s) runs; J2 (QoS urgent, Preempt=standby)
    # comes at 2 and needs the node: preempt_qos.c (preempt_p_preemptable) lets it preempt J1, which
    # runs on for its QoS's GraceTime and ends, recorded PREEMPTED; J2 starts at that end. The
    # record's Elapsed already ends J1 there, so the starts agree either way: what the lists change is
    # who preempted whom. Without the Preempt column in --qos (a file asked before DJSB read it)
    # nothing says J2 may, and the replay says so.
    dump = ("JobIDRaw|User|Account|Partition|QOS|Submit|Eligible|Start|End|Elapsed|Timelimit|AllocCPUS|NNodes|"
            "State|Flags\n"
            "1|u1|a|p|standby|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:00|2026-01-01T00:00:05|"
            "00:00:05|00:02:00|2|1|PREEMPTED|SchedMain\n"
            "2|u1|a|p|urgent|2026-01-01T00:00:02|2026-01-01T00:00:02|2026-01-01T00:00:05|2026-01-01T00:00:35|"
            "00:00:30|00:01:00|2|1|COMPLETED|SchedMain\n")
    (tmp_path / "dump.txt").write_text(dump)
    (tmp_path / "slurm.conf").write_text("PreemptType=preempt/qos\nPreemptMode=CANCEL\n"
                                         "NodeName=n1 CPUs=2\nPartitionName=p Nodes=n1 Default=YES\n")
    (tmp_path / "qos.txt").write_text("normal|0|||||||||||||00:00:00\nstandby|0|||||||||||||00:00:03\n"
                                      "urgent|10||||||||||||standby|00:00:00\n")
    (tmp_path / "old-qos.txt").write_text("normal|0|\nstandby|0|\nurgent|10|\n")
    for qos, preempted in (("qos.txt", True), ("old-qos.txt", False)):
        out = tmp_path / f"history-{qos}"
        assert main(["history", str(tmp_path / "dump.txt"), "--slurm-conf", str(tmp_path / "slurm.conf"),
                     "--qos", str(tmp_path / qos), "--window", "60", "--step", "10", "-q", "-o", str(out)]) == 0
        jobs = pd.read_csv(out / "jobs.csv").set_index("job_id")
        notes = (out / "notes.txt").read_text()
        assert bool(jobs.loc[1].get("preempted_by") == 2) is preempted, jobs.loc[1]
        assert jobs.loc[2, "start"] == jobs.loc[1, "end"]
        assert ("--qos gives no Preempt lists" in notes) is not preempted
