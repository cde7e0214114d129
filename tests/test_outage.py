"""Outage accounting and stopping on real local commands: the retrying
transport records each interval a scheduler did not answer, gives up at once when the run stops
(cutting a hanging command short), and the report leaves out cells that overlapped an outage."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from djsb.errors import JobModuleError, SchedulerStopped
from djsb.harness.rundir import OUTAGE_COLUMNS
from djsb.jobs.outage import Outage, overlaps, spans_outage
from djsb.jobs.scheduler_base import RetryingTransport
from djsb.report import write_report
from djsb.transport import CommandTimeout, LocalTransport
from job_modules.slurm.parsers import is_transient

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"
CONTROLLER_DOWN = (FIXTURES / "squeue_controller_down.stderr").read_text().strip()


def failing_command(counter: Path, failures: int) -> str:
    """A command that prints Slurm's real 'controller down' message and fails its first
    ``failures`` runs (counted in ``counter``), then answers 'ok'."""
    return (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
            f"if [ $n -lt {failures} ]; then echo '{CONTROLLER_DOWN}' >&2; exit 1; fi; echo ok")


def retrying(retry_for: float = 30.0) -> tuple[RetryingTransport, list[Outage]]:
    outages: list[Outage] = []
    transport = RetryingTransport(LocalTransport(), scheduler="slurm", retry_for=retry_for,
                                  transient=is_transient, on_outage=outages.append)
    return transport, outages


def test_an_outage_is_recorded_once_with_its_interval(tmp_path: Path) -> None:
    transport, outages = retrying()
    before = time.time()
    result = transport.run(failing_command(tmp_path / "n", 3), timeout=10)
    after = time.time()
    assert result.stdout.strip() == "ok"
    assert len(outages) == 1
    outage = outages[0]
    assert outage.attempts == 3 and outage.error == CONTROLLER_DOWN
    # back-off 0.5 + 1 + 2 s between the 4 runs: the outage lasted at least 3.5 s, within the call
    assert before <= outage.start and outage.end <= after
    assert outage.duration >= 0.5 + 1 + 2
    # a command that answers at once records nothing
    transport.run("true")
    assert len(outages) == 1


def test_a_slow_answer_is_an_outage() -> None:
    # Slurm's CLI waits up to MessageTimeout for slurmctld: an outage shorter than that shows only
    # as one slow answer (seen live: squeue answering after 12 s, once slurmctld was back)
    transport, outages = retrying()
    transport.slow_answer = 0.5
    assert transport.run("sleep 0.1; echo quick").stdout.strip() == "quick"
    assert outages == []
    before = time.time()
    assert transport.run("sleep 0.8; echo late").stdout.strip() == "late"
    assert len(outages) == 1 and outages[0].attempts == 0
    assert before <= outages[0].start and outages[0].duration >= 0.8


def test_giving_up_records_the_outage_too(tmp_path: Path) -> None:
    transport, outages = retrying(retry_for=1.0)
    with pytest.raises(JobModuleError, match="unreachable for 1 s"):
        transport.run(failing_command(tmp_path / "n", 100), timeout=10)
    # runs at 0 and 0.5 s; the next after 1 more second would pass retry_for
    assert len(outages) == 1 and outages[0].attempts == 2


def test_stop_cuts_a_hanging_command_and_retries_nothing(tmp_path: Path) -> None:
    # a command hanging as a Slurm CLI does for MessageTimeout while slurmctld is down; the stop
    # request comes from another thread as it would from a signal handler
    transport, outages = retrying()
    threading.Timer(0.5, transport.request_stop, args=(1.0,)).start()
    started = time.monotonic()
    with pytest.raises(SchedulerStopped):
        transport.run("sleep 30", timeout=60)
    elapsed = time.monotonic() - started
    # stop at 0.5 s + 1 s grace, checked every 0.2 s (transport.STOP_CHECK_S)
    assert 1.5 <= elapsed < 1.5 + 0.2 + 0.5
    assert len(outages) == 1 and outages[0].attempts == 1
    # after the deadline, nothing runs any more, and a command not run is no outage: the scheduler
    # was not asked (Ctrl-C during an outage recorded one of 0.0 s per cancellation)
    marker = tmp_path / "ran"
    with pytest.raises(SchedulerStopped, match="not run, the run is stopping"):
        transport.run(f"touch {marker}")
    assert not marker.exists()
    assert len(outages) == 1


def test_stop_ends_the_back_off_at_once(tmp_path: Path) -> None:
    # 100 failures would keep it retrying for retry_for = 30 s; the stop comes during a back-off
    transport, outages = retrying()
    threading.Timer(1.0, transport.request_stop, args=(2.0,)).start()
    started = time.monotonic()
    with pytest.raises(SchedulerStopped):
        transport.run(failing_command(tmp_path / "n", 100), timeout=10)
    # runs at 0 and 0.5 s, back-off of 1 s cut at 1.0 s, one last try within the grace, raises
    assert time.monotonic() - started < 1.0 + 0.5
    assert len(outages) == 1


def test_local_stop_by_kills_the_whole_command() -> None:
    transport = LocalTransport()
    transport.stop_by(time.monotonic() + 0.5)
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match="cut short"):
        transport.run("sleep 30 & sleep 30; wait", timeout=60)
    assert time.monotonic() - started < 0.5 + 0.2 + 0.5


def test_overlap_is_closed_interval_arithmetic() -> None:
    outage = Outage(start=100.0, end=120.0, scheduler="slurm", attempts=4, command="squeue", error="down")
    assert overlaps(90, 100, outage) and overlaps(120, 130, outage)  # touching counts
    assert overlaps(105, 110, outage) and overlaps(90, 130, outage)
    assert not overlaps(90, 99.9, outage) and not overlaps(120.1, 130, outage)
    assert not spans_outage(0, 1000, []) and spans_outage(0, 1000, [outage])


JOBS_HEADER = ("stage,scenario,n_a,sample,app,index,name,job_id,state,submit,start,end,wait,exec,response,"
               "slowdown,tasks,cpus_per_task,cpus,nodes,iterations,threads_min,triad_MBps,validated,"
               "suspended_s,shared_with_sim,times_source,outage")


def job_row(stage: str, scenario: str, sample: int, app: str, exec_s: float, outage: bool = False) -> str:
    n_a = 1 if stage == "execution" else 0
    cpus = 4 if app == "simulation" else 2
    return (f"{stage},{scenario},{n_a},{sample},{app},0,x,1,COMPLETED,0,0,{exec_s},0,{exec_s},{exec_s},,"
            f"2,{cpus // 2},{cpus},n1,,,,True,0,False,scheduler,{outage}")


def write_run_with_an_outage(run_dir: Path, more_cells: str) -> None:
    """jobs.csv and cells.csv of a run whose oversubscription sample 0 is clean (slowdown_s =
    12 / 10 = 1.2) and sample 1 spanned an outage (31 / 10 = 3.1); ``more_cells`` adds cells.csv rows."""
    rows = [job_row("reference", "", 0, "simulation", 10), job_row("reference", "", 0, "analytics", 2),
            job_row("execution", "oversubscription", 0, "simulation", 12),
            job_row("execution", "oversubscription", 0, "analytics", 2),
            job_row("execution", "oversubscription", 1, "simulation", 31, outage=True),
            job_row("execution", "oversubscription", 1, "analytics", 2)]
    (run_dir / "jobs.csv").write_text(JOBS_HEADER + "\n" + "\n".join(rows) + "\n")
    (run_dir / "cells.csv").write_text(
        "stage,scenario,n_a,sample,status,outage,reason\n"
        "reference,,0,0,completed,False,\n"
        "execution,oversubscription,1,0,completed,False,\n"
        "execution,oversubscription,1,1,completed,True,\n" + more_cells)


def test_report_leaves_out_outage_cells_and_names_failed_ones(tmp_path: Path) -> None:
    write_run_with_an_outage(tmp_path, "execution,oversubscription,1,2,failed,False,slurm: submission refused: "
                                       "node configuration\n"
                                       "execution,stopcont,1,0,failed,False,slurm: submission refused\n")
    summary = write_report(tmp_path, plots=False).set_index("scenario")
    over = summary.loc["oversubscription"]
    assert over["samples"] == 1 and over["slowdown_s"] == pytest.approx(1.2)
    assert over["outage_samples"] == "1" and over["failed_samples"] == "2"
    # a (scenario, n_a) with failed cells only still has its row, saying so
    stop = summary.loc["stopcont"]
    assert stop["samples"] == 0 and stop["failed_samples"] == "0" and pd.isna(stop["slowdown_s"])
    # report.html says the same to a person
    page = (tmp_path / "report.html").read_text()
    assert "sample 2 failed and is left out: slurm: submission refused: node configuration" in page
    assert "sample 0 failed and is left out: slurm: submission refused [stopcont/n_a=1]" in page
    # summary.csv's warnings carry each failed sample's reason on its own row
    assert "sample 2 failed and is left out: slurm: submission refused: node configuration" in over["warnings"]
    assert stop["warnings"] == "sample 0 failed and is left out: slurm: submission refused"
    assert "<li>nan" not in page  # a row without samples has no warning to show
    # and so do summary.csv's warnings: the sample left out for an outage, and why
    left_out = "sample(s) 1 overlapped a scheduler outage (see outages.csv): left out (djsb report --include-outages"
    assert left_out in over["warnings"] and f"{left_out} keeps them) [oversubscription/n_a=1]" in page
    # the flag keeps it: mean of 1.2 and 3.1 = 2.15
    kept = write_report(tmp_path, plots=False, include_outages=True).set_index("scenario")
    assert kept.loc["oversubscription", "samples"] == 2
    assert kept.loc["oversubscription", "slowdown_s"] == pytest.approx((1.2 + 3.1) / 2)
    assert "overlapped a scheduler outage (see outages.csv): included" in (tmp_path / "report.html").read_text()
    assert "sample(s) 1 overlapped a scheduler outage (see outages.csv): included (--include-outages)" in \
        kept.loc["oversubscription", "warnings"]
    on_disk = pd.read_csv(tmp_path / "summary.csv", keep_default_na=False)
    assert list(on_disk.columns[-2:]) == ["failed_samples", "outage_samples"]


def test_a_reference_sample_in_an_outage_is_left_out_while_another_is_clean(tmp_path: Path) -> None:
    # reference sample 0 clean (simulation 10 s), sample 1 across an outage (30 s): T_ref_alone of
    # the simulation is 10 s without it, (10 + 30) / 2 = 20 s with it; the execution cell's
    # simulation took 12 s: slowdown 12 / 10 = 1.2, or 12 / 20 = 0.6
    rows = [job_row("reference", "", 0, "simulation", 10), job_row("reference", "", 0, "analytics", 2),
            job_row("reference", "", 1, "simulation", 30, outage=True), job_row("reference", "", 1, "analytics", 2),
            job_row("execution", "oversubscription", 0, "simulation", 12),
            job_row("execution", "oversubscription", 0, "analytics", 2)]
    (tmp_path / "jobs.csv").write_text(JOBS_HEADER + "\n" + "\n".join(rows) + "\n")
    cells = ("stage,scenario,n_a,sample,status,outage,reason\n"
             "reference,,0,0,completed,{0},\nreference,,0,1,completed,True,\n"
             "execution,oversubscription,1,0,completed,False,\n")
    (tmp_path / "cells.csv").write_text(cells.format(False))
    assert write_report(tmp_path, plots=False)["slowdown_s"].tolist() == pytest.approx([1.2])
    assert write_report(tmp_path, plots=False, include_outages=True)["slowdown_s"].tolist() == pytest.approx([0.6])
    # with no clean reference sample left, both are kept (there would be no T_ref_alone at all)
    (tmp_path / "cells.csv").write_text(cells.format(True))
    assert write_report(tmp_path, plots=False)["slowdown_s"].tolist() == pytest.approx([0.6])


def test_report_shows_failed_and_outage_samples_where_they_happened(tmp_path: Path) -> None:
    write_run_with_an_outage(tmp_path, "execution,oversubscription,1,2,failed,False,slurm: submission refused\n")
    # one outage of 1000.0 .. 1042.5 s: 42.5 s, 3 failed attempts
    (tmp_path / "outages.csv").write_text(f"{','.join(OUTAGE_COLUMNS)}\n"
                                          f"1000.0,1042.5,slurm,3,squeue,\"{CONTROLLER_DOWN}\"\n")
    summary = write_report(tmp_path, plots=True)
    page = (tmp_path / "report.html").read_text()
    # the summary row of oversubscription, n_a=1 is flagged and says which samples and why they are out
    assert '<tr class="flagged"><td>oversubscription</td><td>1</td><td>1</td>' in page
    assert "<td>failed: sample 2; outage: sample 1 (left out)</td></tr>" in page
    # the outage itself, in local time, with its duration
    began = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1000.0))
    assert f"<tr><td>{began}</td><td>42.5</td><td>slurm</td><td>3</td>" in page
    assert (tmp_path / "figures" / "djsb.png").stat().st_size > 10_000

    # on the figures: one mark per lost sample kind, at that n_a, at the foot of the panel
    from djsb.plotting import plt
    from djsb.report.plots import LEFT_OUT_MARKS, mark_left_out

    fig, ax = plt.subplots()
    mark_left_out(ax, summary, 0.0, "red")
    marks = {c.get_label(): np.asarray(c.get_offsets()).tolist() for c in ax.collections}
    heights = {text: height for _, _, height, text in LEFT_OUT_MARKS}
    assert marks == {"a sample failed": [[1.0, heights["a sample failed"]]],
                     "a sample overlapped an outage": [[1.0, heights["a sample overlapped an outage"]]]}
    plt.close(fig)
