"""``djsb history`` against ground truth we own: histories recorded on a 16-node Slurm mini-cluster by
bench/record_history.py and committed under tests/fixtures/history/ (the sacct dump, slurm.conf and
sacctmgr's answers of each, with its provenance), replayed offline from those files alone.

``site-1`` and ``site-2`` are the same drawn jobs submitted twice at the same instants (three
partitions, multifactor priority with Fair Tree over three accounts, a QoS with a per-user limit,
memory), so Slurm's own run-to-run spread on that history is measured by pairing the two records
job by job (:func:`~djsb.report.replay_error.records_paired`). ``site-x4-1`` and ``site-x4-2`` are
the first 600 jobs of the same draw with every duration four times longer, recorded twice the same
way, to tell the model's error from the second Slurm spends between an end and the next start
(docs/history.md). The rule, declared before the
records were made: the replay is within Slurm's spread on a measure when its error against each
record is at most Slurm's own difference between the two records on that measure, for the
moving-average wait's MAPE (2-minute window, every 30 s: bench/record_history.py) and the mean
absolute wait error. The same rule is applied again to the replays given each record's slurmctld
log (``--slurmctld-log``), against Slurm's spread measured on the logs' times. ``features`` adds what the model lacks (a reservation, a node drained and
resumed, throttled arrays, dependencies): its replay must run and say what it does not model.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from djsb.cli import main
from djsb.report.replay_error import records_paired, summary

FIXTURES = Path(__file__).parent / "fixtures" / "history"
WINDOW, STEP = 120.0, 30.0


def replay(name: str, out: Path, *, with_log: bool = False, earlier: str | None = None) -> pd.DataFrame:
    """``djsb history`` on the committed record ``name`` (``with_log``: given its slurmctld log
    too; ``earlier``: the record made before it on the same cluster, whose jobs charge fair share
    before it starts); its errors.csv."""
    record = FIXTURES / name
    log = ["--slurmctld-log", str(record / "slurmctld.log.gz")] if with_log else []
    log += ["--earlier", str(FIXTURES / earlier / "dump.txt.gz")] if earlier else []
    where = out / f"{name}{'-log' if with_log else ''}"
    assert main(["history", str(record / "dump.txt.gz"), "--slurm-conf", str(record / "slurm.conf"),
                 "--associations", str(record / "assoc.txt"), "--qos", str(record / "qos.txt"),
                 "--events", str(record / "events.txt"), "--reservations", str(record / "reservations.txt"),
                 *log, "--window", str(WINDOW), "--step", str(STEP), "-o", str(where)]) == 0
    return pd.read_csv(where / "errors.csv")


def test_two_records_paired_in_submission_order_worked_by_hand() -> None:
    # record 1 waits 0, 4, 2; record 2 of the same submissions (other ids, listed out of order) 1, 4, 0
    # reasons, paired the same way: None/QOSMaxJobsPerUserLimit, QOSMaxJobsPerUserLimit/same, missing
    # (pandas' None)/None
    first = pd.DataFrame({"job_id": [11, 12, 13], "submit": [0.0, 5.0, 9.0], "recorded_start": [0.0, 9.0, 11.0],
                          "recorded_wait": [0.0, 4.0, 2.0], "recorded_pass": ["main", "backfill", "main"],
                          "recorded_reason": ["None", "QOSMaxJobsPerUserLimit", None]})
    second = pd.DataFrame({"job_id": [23, 21, 22], "submit": [9.0, 0.0, 5.0], "recorded_start": [9.0, 1.0, 9.0],
                           "recorded_wait": [0.0, 1.0, 4.0], "recorded_pass": ["main", "main", "main"],
                           "recorded_reason": ["None", "QOSMaxJobsPerUserLimit", "QOSMaxJobsPerUserLimit"]})
    paired = records_paired(first, second)
    assert paired["simulated_wait"].tolist() == [1.0, 4.0, 0.0]
    assert paired["start_error"].tolist() == [1.0, 0.0, -2.0]
    figures = summary(paired, window=100.0, step=10.0)
    assert figures["mean_abs_start_error"] == pytest.approx(1.0)  # (1 + 0 + 2) / 3
    assert figures["pass_agreement"] == pytest.approx(2 / 3)
    # of the two jobs either record held (the first two), one was held for the same reason in both
    assert figures["reason_agreement"] == pytest.approx(1 / 2)
    # one moving-average sample, at the first submit + the window (100 s), over the jobs submitted
    # in (0, 100]: the second and third, waits 4 and 0 against 4 and 2, means 2 against 3
    assert figures["moving_average_mape"] == pytest.approx(abs(2 - 3) / 3)
    with pytest.raises(ValueError, match="3 and 2 jobs"):
        records_paired(first, second.iloc[:2])


PAIRS = {"site": ("site-1", "site-2"), "site-x4": ("site-x4-1", "site-x4-2"),
         "features": ("features", "features-2"), "gpu": ("gpu-1", "gpu-2"),
         "gpu-x4": ("gpu-x4-1", "gpu-x4-2")}
"""Each pair of records of one history: the 2,000 jobs of 1-40 s, the first 600 of the same draw
with every duration four times longer (bench/record_history.py --time-scale 4), the features
history (a reservation, a drained node, throttled arrays, dependencies) recorded twice, and the GPU
history (bench/record_history.py --gpus-only: nodes of two a100 each, a GPU partition billing a GPU
as four CPUs, a QoS of at most eight GPUs per user) recorded twice, and again with every duration
four times longer (--time-scale 4)."""
EARLIER = {"site-2": "site-1", "site-x4-2": "site-x4-1", "gpu-2": "gpu-1", "gpu-x4-2": "gpu-x4-1"}
"""The records made right after another on the same cluster, which kept its fair-share usage: each
is replayed with that one's dump before it (--earlier). The features records each began a fresh
cluster."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    out = tmp_path_factory.mktemp("history")
    return {name: replay(name, out, earlier=EARLIER.get(name)) for pair in PAIRS.values() for name in pair}


@pytest.fixture(scope="module")
def site_with_log(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    out = tmp_path_factory.mktemp("history-log")
    return {name: replay(name, out, with_log=True, earlier=EARLIER.get(name)) for pair in PAIRS.values()
            for name in pair}


@pytest.mark.parametrize(("name", "jobs"), [("site-1", 2000), ("site-2", 2000), ("site-x4-1", 600),
                                            ("site-x4-2", 600)])
def test_the_records_are_site_like(site: dict[str, pd.DataFrame], name: str, jobs: int) -> None:
    errors = site[name]
    assert len(errors) == jobs
    assert set(errors["partition"]) == {"debug", "batch", "long"}
    assert set(errors["account"]) == {"physics", "biology", "climate"}
    assert set(errors["qos"]) == {"normal", "high"}
    assert set(errors["recorded_pass"]) >= {"main", "backfill"}
    assert errors["simulated_start"].notna().all()  # every job replayed
    assert (errors["recorded_wait"] > 0).mean() > 0.3  # jobs queued


@pytest.mark.parametrize("name", ["gpu-1", "gpu-2", "gpu-x4-1", "gpu-x4-2"])
def test_the_gpu_records_hold_gpu_jobs_back_by_the_qos_gpu_limit(site: dict[str, pd.DataFrame], name: str) -> None:
    # every third batch job of the draw went to the partition gpu asking GPUs (131 of 600), and the QoS
    # gpu's MaxTRESPerUser=gres/gpu=8 held some of them, recorded and replayed (acct_policy.c
    # _validate_tres_limit_for_qos: QOSMaxGRESPerUser)
    errors = site[name]
    assert len(errors) == 600 and (errors["partition"] == "gpu").sum() == 131
    assert set(errors.loc[errors["partition"] == "gpu", "qos"]) == {"gpu"}
    for side in ("recorded", "simulated"):
        held = errors.loc[errors[f"{side}_reason"] == "QOSMaxGRESPerUser", "partition"]
        assert len(held) > 0 and set(held) == {"gpu"}, side


NOT_WITHIN = pytest.mark.xfail(strict=True, reason=(
    "not reproduced, measured on the committed records: the model's waits are 51-65 % shorter than "
    "Slurm's (mean 6.0 s against 12.2 s, 4.8 s against 13.9 s) where Slurm's two records differ by 14 %; "
    "moving-average MAPE 47.3 % and 60.9 % against Slurm's own 15.5 %, mean absolute wait error 7.63 s "
    "and 10.1 s against Slurm's own 7.54 s (docs/history.md: the sub-second timing sacct cuts)"))
"""The comparisons the model fails, as measured on the committed records (a model that comes within
Slurm's spread there turns them into failures to update: strict)."""
FEATURES_MAPE_OUTSIDE = pytest.mark.xfail(strict=True, reason=(
    "not within, measured on the committed records: moving-average MAPE 23.5 % and 18.9 % against the "
    "two features records from the dump alone (5.0 % against the first given its log), Slurm's own 4.5 % "
    "(4.2 % on the logs' times); the mean absolute wait error is within (Slurm's own 54.8 s)"))
GPU_OUTSIDE = pytest.mark.xfail(strict=True, reason=(
    "not within, measured on the committed GPU records (Slurm's own spread: MAPE 49.1 % and 4.74 s from "
    "the dumps, 48.1 % and 4.67 s on the logs' times): against gpu-2 the MAPE from the dump is 57.8 % "
    "and the mean absolute wait error given the log 4.96 s; the other six comparisons are within"))
X4_MAPE_OUTSIDE = pytest.mark.xfail(strict=True, reason=(
    "not within, measured on the committed records: moving-average MAPE 13.5 % against 4x record 1, "
    "Slurm's own 13.1 % (the mean absolute wait error, 15.7 s against 21.4 s, is within)"))


@pytest.mark.parametrize(("given", "pair", "name", "measure"), [
    pytest.param("dump", "site", "site-1", "moving_average_mape", marks=NOT_WITHIN),
    pytest.param("dump", "site", "site-2", "moving_average_mape", marks=NOT_WITHIN),
    pytest.param("dump", "site", "site-1", "mean_abs_start_error", marks=NOT_WITHIN),
    pytest.param("dump", "site", "site-2", "mean_abs_start_error", marks=NOT_WITHIN),
    pytest.param("dump", "site-x4", "site-x4-1", "moving_average_mape", marks=X4_MAPE_OUTSIDE),
    ("dump", "site-x4", "site-x4-2", "moving_average_mape"),
    ("dump", "site-x4", "site-x4-1", "mean_abs_start_error"),
    ("dump", "site-x4", "site-x4-2", "mean_abs_start_error"),
    ("log", "site", "site-1", "moving_average_mape"),
    ("log", "site", "site-2", "moving_average_mape"),
    ("log", "site", "site-1", "mean_abs_start_error"),
    ("log", "site", "site-2", "mean_abs_start_error"),
    ("log", "site-x4", "site-x4-1", "moving_average_mape"),
    ("log", "site-x4", "site-x4-2", "moving_average_mape"),
    ("log", "site-x4", "site-x4-1", "mean_abs_start_error"),
    ("log", "site-x4", "site-x4-2", "mean_abs_start_error"),
    pytest.param("dump", "features", "features", "moving_average_mape", marks=FEATURES_MAPE_OUTSIDE),
    pytest.param("dump", "features", "features-2", "moving_average_mape", marks=FEATURES_MAPE_OUTSIDE),
    ("dump", "features", "features", "mean_abs_start_error"),
    ("dump", "features", "features-2", "mean_abs_start_error"),
    pytest.param("log", "features", "features", "moving_average_mape", marks=FEATURES_MAPE_OUTSIDE),
    ("log", "features", "features-2", "moving_average_mape"),
    ("log", "features", "features", "mean_abs_start_error"),
    ("log", "features", "features-2", "mean_abs_start_error"),
    ("dump", "gpu", "gpu-1", "moving_average_mape"),
    pytest.param("dump", "gpu", "gpu-2", "moving_average_mape", marks=GPU_OUTSIDE),
    ("dump", "gpu", "gpu-1", "mean_abs_start_error"),
    ("dump", "gpu", "gpu-2", "mean_abs_start_error"),
    ("log", "gpu", "gpu-1", "moving_average_mape"),
    ("log", "gpu", "gpu-2", "moving_average_mape"),
    ("log", "gpu", "gpu-1", "mean_abs_start_error"),
    pytest.param("log", "gpu", "gpu-2", "mean_abs_start_error", marks=GPU_OUTSIDE),
    *[(given, "gpu-x4", name, measure) for given in ("dump", "log") for name in PAIRS["gpu-x4"]
      for measure in ("moving_average_mape", "mean_abs_start_error")],
])
def test_the_replay_is_within_slurms_own_spread(request: pytest.FixtureRequest, given: str, pair: str, name: str,
                                                measure: str) -> None:
    # record 2 of each site pair was made right after record 1 on the same cluster, which kept record
    # 1's fair-share usage: it is replayed with record 1's dump before it (--earlier, EARLIER)
    # given "log": each record replayed with its slurmctld log too (djsb history --slurmctld-log: the
    # submissions, starts and run times to the millisecond, the passes at Slurm's instants), and
    # Slurm's own spread measured on the logs' times
    site = request.getfixturevalue("site_with_log" if given == "log" else "site")
    first, second = PAIRS[pair]
    spread = summary(records_paired(site[first], site[second]), WINDOW, STEP)[measure]
    model = summary(site[name], WINDOW, STEP)[measure]
    print(f"{measure}: model given the {given} against {name} {model:.4g}, Slurm against itself {spread:.4g}")
    assert math.isfinite(model) and math.isfinite(spread)
    assert model <= spread, (model, spread)


def test_a_history_with_what_the_model_lacks_replays_and_says_so(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    errors = replay("features", tmp_path)
    notes = (tmp_path / "features" / "notes.txt").read_text()
    # the arrays' throttle and the dependencies are held in the replay (README: every 25th job an
    # array of 6 tasks throttled to 2, every 40th waiting for the job submitted 3 before it)
    assert "144 task(s) of 24 job array(s) with a throttle" in notes
    assert "12 job(s) asked --dependency (after, afterok, afterany, afternotok, aftercorr, singleton) on jobs " \
           "of the replay" in notes
    # h12's drain is replayed: events.txt has it from 19:36:55 to 19:38:19, 84 s
    outages = pd.read_csv(tmp_path / "features" / "out_of_service.csv")
    assert outages[["node", "state", "cores", "reason"]].values.tolist() == [["h12", "DRAIN", 2, "bench drain"]]
    assert (outages["end"] - outages["start"]).tolist() == [84.0]
    assert "h12" not in notes and "maintenance" not in notes  # the reservation is replayed too
    # the debug partition is h[1-4], all of it reserved: its jobs whose run would have crossed the
    # window waited ReqNodeNotAvail in the record (132 jobs), and the replay holds most of the same
    # jobs for it (119 at this commit)
    recorded = errors["recorded_reason"] == "ReqNodeNotAvail"
    both = recorded & (errors["simulated_reason"] == "ReqNodeNotAvail")
    assert recorded.sum() == 132 and both.sum() >= 0.8 * recorded.sum()
    assert errors["simulated_start"].notna().all()
    assert errors["job_id"].nunique() == len(errors)
    print(capsys.readouterr().out)
    print(summary(errors, WINDOW, STEP))
