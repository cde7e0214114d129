"""Tables 5-6 of paper 000 from a six-scenario sweep: scenario numbering, ratios, accuracy groups,
and the paper's direction on a real trace (PSP+AGING with real estimates waits less than FCFS)."""

from __future__ import annotations

from bisect import bisect_right
from pathlib import Path

import pandas as pd
import pytest
from support import TraceFile

from djsb.cli import main
from djsb.model import ClusterSpec, Simulation
from djsb.model.priority.presets import preset
from djsb.model.priority.psp import GROUP_BOUNDS, GROUP_PRIORITY
from djsb.report.psp_scenarios import TABLE_4, accuracy_groups, wait_ratios, write_psp_report
from djsb.workloads.estimate import with_estimates
from djsb.workloads.swf import read_swf

KTH = "KTH-SP2-1996-2.1-cln.swf.gz"


def test_table_4_numbering() -> None:
    # Table 4 of 000: 1-3 FCFS, PSP, PSP+AGING with perfect estimates; 4-6 the same with real ones.
    assert TABLE_4 == {("fcfs", "runtime"): 1, ("psp", "runtime"): 2, ("psp_aging", "runtime"): 3,
                       ("fcfs", "requested"): 4, ("psp", "requested"): 5, ("psp_aging", "requested"): 6}


def sweep_dir(tmp_path: Path) -> Path:
    """A made-up sweep of the six scenarios: mean wait 60 x (7 - k) minutes, makespan k days."""
    rows = [{"point": k - 1, "workload.estimate": estimate, "policy.preset": policy, "workload.swf": "x/T.swf.gz",
             "jobs": 2, "mean_wait": 3600.0 * (7 - k), "makespan": 86400.0 * k, "estimate": estimate}
            for (policy, estimate), k in TABLE_4.items()]
    pd.DataFrame(rows).to_csv(tmp_path / "sweep.csv", index=False)
    for k in range(6):
        point = tmp_path / "points" / str(k)
        point.mkdir(parents=True)
        # u asked 100 s and ran 17 (A = 0.17) then ran again: its second job is in g4 = 25.
        pd.DataFrame({"job_id": [1, 2], "user": ["u", "u"], "submit": [0.0, 50.0], "run_time": [17.0, 30.0],
                      "requested_time": [100.0, 100.0], "wait": [0.0, 60.0 * k]}).to_csv(
            point / "jobs.csv", index=False)
    return tmp_path


def test_ratios_beside_the_papers(tmp_path: Path) -> None:
    frame = pd.read_csv(sweep_dir(tmp_path) / "sweep.csv")
    frame["trace"], frame["mean_wait_min"], frame["makespan_days"] = "T", frame["mean_wait"] / 60, frame["makespan"] / 86400
    frame["scenario"] = range(1, 7)
    ratios = wait_ratios(frame).set_index("ratio")
    # measured: wait 60 x (7 - k) min -> 1/6 = 360 / 60 = 6; makespan k days -> 6/4 = 1.5.
    assert ratios.loc["wait 1/6", "measured"] == 6.0 and ratios.loc["makespan 6/4", "measured"] == 1.5
    # Sec. 5 of 000: scenario 1 waits "1.956 times" scenario 6 on Curie (4569 / 2336), "1.800" on Gaia (4358 / 2421).
    assert ratios.loc["wait 1/6", "paper CEA-Curie"] == pytest.approx(1.956, abs=5e-4)
    assert ratios.loc["wait 1/6", "paper Gaia"] == pytest.approx(1.800, abs=5e-4)
    # Table 6: PSP+AGING real / FCFS real makespan, 17.71 / 16.17 on Curie.
    assert ratios.loc["makespan 6/4", "paper CEA-Curie"] == pytest.approx(17.71 / 16.17)


def test_accuracy_group_of_each_job_by_hand() -> None:
    # Ten jobs of 17 s out of 100 s asked (A = 0.17), then an eleventh: the first has no history (49),
    # the second sees A = 0.17 (g4 = 25), the eleventh sees ten 0.17 -> 25. v's job ran past its
    # request (A capped at 1) so v's next job is in g10 = 49.
    jobs = pd.DataFrame({"job_id": range(1, 14), "user": ["u"] * 11 + ["v", "v"],
                         "submit": [float(i) for i in range(13)], "run_time": [17.0] * 11 + [500.0, 1.0],
                         "requested_time": [100.0] * 13})
    assert accuracy_groups(jobs).tolist() == [49] + [25] * 10 + [49, 49]


def test_kth_means_on_a_boundary_keep_their_group(trace: TraceFile) -> None:
    # KTH-SP2's first 5,000 jobs in submission order: the owners of jobs 446, 2545 and 3400 have a
    # mean accuracy of exactly 1/5, 13/25 and 3/20, the lower bounds of g5 (30), g8 (43) and g4 (25)
    # in Table 1 of 000. In floating point (mean of the float ratios) each sums to a hair below and
    # lands in the group below (25, 40, 20) of the float bounds; no other job moves.
    kth = read_swf(trace(KTH), limit=5000).jobs
    jobs = pd.DataFrame({"job_id": [j.job_id for j in kth], "user": [j.user for j in kth],
                         "submit": [j.submit for j in kth], "run_time": [j.run_time for j in kth],
                         "requested_time": [j.requested_time for j in kth]})
    exact = dict(zip(jobs["job_id"], accuracy_groups(jobs), strict=True))
    float_bounds = [float(bound) for bound in GROUP_BOUNDS]
    history: dict[str, list[float]] = {}
    moved = {}
    for job in jobs.sort_values(["submit", "job_id"]).itertuples():
        past = history.setdefault(str(job.user), [])[-10:]
        in_float = GROUP_PRIORITY[bisect_right(float_bounds, sum(past) / len(past))] if past else 49
        if in_float != exact[job.job_id]:
            moved[job.job_id] = (in_float, exact[job.job_id])
        if job.requested_time > 0:
            history[str(job.user)].append(min(1.0, job.run_time / job.requested_time))
    assert moved == {446: (25, 30), 2545: (40, 43), 3400: (20, 25)}


def test_psp_report_writes_tables_groups_and_charts(tmp_path: Path) -> None:
    path = write_psp_report(sweep_dir(tmp_path))
    table = pd.read_csv(tmp_path / "table5_6.csv")
    assert table["mean_wait_min"].tolist() == [360.0, 300.0, 240.0, 180.0, 120.0, 60.0]
    assert table["makespan_days"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    groups = pd.read_csv(tmp_path / "groups.csv")
    # Scenario 6 is point 5: job 1 (g10 = 49) waited 0, job 2 (g4 = 25) waited 60 x 5 s = 5 min.
    six = groups[groups["scenario"] == 6].set_index("group")["mean_wait_min"].to_dict()
    assert six == {25: 5.0, 49: 0.0}
    assert {p.name for p in tmp_path.glob("*.png")} == {"wait_T.png", "makespan_T.png"}
    assert "wait 1/6" in path.read_text()


def test_psp_report_of_a_directory_without_sweep_is_one_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["psp-report", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == f"djsb: error: {tmp_path}: no sweep.csv here: give the output " \
                                              "directory of djsb sweep"


def test_kth_psp_aging_with_real_estimates_waits_less_than_fcfs(trace: TraceFile) -> None:
    # 000 Tables 5-6, scenario 6 vs 4: PSP+AGING with real estimates cuts the mean wait of FCFS and
    # does not improve the makespan. KTH-SP2's first 5,000 jobs on its 100 processors.
    jobs = with_estimates(read_swf(trace(KTH), limit=5000).jobs, "requested", 1.0, lambda j: None)
    results = {}
    for name in ("fcfs", "psp_aging"):
        priority, scheduler = preset(name)
        frame = Simulation(jobs, ClusterSpec.homogeneous(100, 1), scheduler, priority).run().jobs
        results[name] = (frame["wait"].mean(), frame["end"].max() - frame["submit"].min())
    assert results["psp_aging"][0] < 0.9 * results["fcfs"][0]
    assert results["psp_aging"][1] >= results["fcfs"][1]
