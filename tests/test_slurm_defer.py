"""When Slurm starts a batch job, with and without ``defer``, on the real mini-cluster, against the
model's queued passes (djsb/model/pass_timing.py), worked by hand.

Slurm 22.05 never starts a batch job inside its submission (``job_allocate`` is called with
``allocate`` 0 for sbatch): the submission queues a request, and slurmctld's background loop
(about once a second) runs a main pass when ``batch_sched_delay`` whole seconds passed since its
previous pass, defer or not. So on an idle cluster a job starts within a second or two (not at the
60 s periodic ``sched_interval`` pass), and jobs submitted back to back start ``batch_sched_delay``
apart. What ``defer`` changes for batch jobs is a job's end: without it the end runs a pass at once,
with it the end only queues a request for the loop (tests/test_model_backfill.py works that case
by hand; live it depends on when slurmctld's epilog handler refreshes its cached defer flag after a
reconfigure, which this test cannot control). sdiag's main-scheduler "Total cycles" counts the
passes. The test sets SchedulerParameters through slurm.conf and ``scontrol reconfigure``, and
restores them.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster, write_atomically
from support import wait_until

from djsb.model import ClusterSpec, SchedulerConfig, Simulation
from djsb.slurmsite.slurm_config import scheduler_cycles
from djsb.workloads.job import TraceJob

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CONF = Path("/etc/slurm/slurm.conf")
PARAMS = re.compile(r"^SchedulerParameters=.*$", re.MULTILINE)


def slurm(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "SLURM_TIME_FORMAT": "%s"})
    assert done.returncode == 0, f"{' '.join(args)}: {done.stderr}"
    return done.stdout


@contextmanager
def scheduler_parameters(value: str) -> Iterator[None]:
    """slurm.conf's SchedulerParameters set to ``value`` for the block (scontrol reconfigure)."""
    original = CONF.read_text()
    write_atomically(CONF, PARAMS.sub(f"SchedulerParameters={value}", original))
    try:
        reconfigure(value)
        yield
    finally:
        write_atomically(CONF, original)
        reconfigure(PARAMS.search(original).group(0).partition("=")[2])  # type: ignore[union-attr]


RECONFIGURED = [0]
"""The Unix second of the last reconfigure."""


def reconfigure(value: str) -> None:
    """``scontrol reconfigure``, then wait until the main scheduler ran a pass with ``value``: it
    reads its parameters (batch_sched_delay among them) only when it runs, so a case started before
    would be timed by the previous ones. The reconfigure queues that pass itself. Two reconfigures
    are never made within one second: slurmctld's caches of the parameters (the main scheduler's,
    the epilog handler's defer flag) compare the configuration's last_update, in whole seconds, and
    would keep the first one's values."""
    wait_until(lambda: int(time.time()) > RECONFIGURED[0], 2, "a new second")
    before = scheduler_cycles(slurm("sdiag"))["main"]
    slurm("scontrol", "reconfigure")
    RECONFIGURED[0] = int(time.time())
    wait_until(lambda: f"= {value}" in slurm("scontrol", "show", "config"), 60, "slurmctld took the new parameters")
    wait_until(lambda: scheduler_cycles(slurm("sdiag"))["main"] > before, 30, "a pass ran with them")


def submit_one() -> str:
    """A 60 s sleep job of one node (2 CPUs) on the partition whose CPUs are shared only on request
    (OverSubscribe=YES: dedicated, as the model gives them); its id."""
    return slurm("sbatch", "--parsable", "--partition=oversub", "--ntasks=1", "--cpus-per-task=2",
                 "--mem-per-cpu=64", "--time=1", "--job-name=djsb-defer", "--output=/dev/null",
                 "--wrap=sleep 60").strip()


def times_of(job_id: str) -> tuple[int, int | None, int | None]:
    """Slurm's submit, start (None while pending) and end (None while not ended), whole seconds."""
    submit, start, end, state = slurm("squeue", "--noheader", "--states=all", f"--jobs={job_id}",
                                      "--format=%V|%S|%e|%T").strip().split("|")
    started = state not in ("PENDING", "CONFIGURING")
    ended = state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING")
    return int(submit), int(start) if started else None, int(end) if ended else None


def idle_for(seconds: float) -> None:
    """Wait until none of the cluster's jobs is queued or running, then ``seconds`` more (the loop's
    previous pass, the reconfigure's own, must lie further back than batch_sched_delay)."""
    busy = ("squeue", "--noheader", "--states=PENDING,CONFIGURING,RUNNING,SUSPENDED,COMPLETING", "--format=%i")
    wait_until(lambda: not slurm(*busy).strip(), 60, "the cluster is idle")
    time.sleep(seconds)


def model_starts(jobs: list[TraceJob], config: SchedulerConfig) -> list[float]:
    """The model's starts of ``jobs`` on the mini-cluster's size (4 nodes x 2 CPUs), on Slurm's
    clock: the background loop's wake-ups fall on its whole seconds."""
    result = Simulation(jobs, ClusterSpec.homogeneous(4, 2), config).run()
    return [float(v) for v in result.jobs.sort_values("job_id")["start"]]


@pytest.mark.parametrize("defer", [False, True], ids=["no-defer", "defer"])
def test_submissions_wait_for_the_background_loop_defer_or_not(slurm_cluster: SlurmCluster,
                                                               defer: bool) -> None:
    # Three one-node jobs 1.2 s apart, batch_sched_delay 3. Every job starts at a pass of the loop,
    # and the loop's passes (time(NULL) whole seconds) lie at least 3 s apart: the jobs start at two
    # instants at most, 3 s or more apart, each within 3 s (the delay) + 1 s (a wake-up) + 1 s
    # (whole seconds) of its submission. Which jobs share a pass depends on when the loop last ran
    # (its periodic sched_interval pass too), which the test does not control.
    params = ("defer," if defer else "") + "batch_sched_delay=3,sched_interval=60,bf_interval=60"
    with scheduler_parameters(params):
        idle_for(4)
        before = scheduler_cycles(slurm("sdiag"))["main"]
        ids = []
        for _ in range(3):
            ids.append(submit_one())
            time.sleep(1.2)
        try:
            wait_until(lambda: all(times_of(i)[1] is not None for i in ids), 30, "every job started")
            times = [times_of(i) for i in ids]
            passes = scheduler_cycles(slurm("sdiag"))["main"] - before
        finally:
            slurm("scancel", *ids)
    submits = [submit for submit, _, _ in times]
    starts = [int(start or 0) for _, start, _ in times]
    assert_loop_passes(submits, starts, delay=3)
    assert passes >= 2
    # the model (wake-ups on Slurm's whole seconds) obeys the same rule. Its submissions count from
    # the first one's second: on Unix times its periodic sched_interval passes fall on multiples of
    # 60 s, and one between the submissions (1 time in 20: submitted at ...197, ...198, ...200 in a
    # CI run) starts a job 2 s after a queued pass, a phase Slurm's own periodic pass need not share
    config = SchedulerConfig(backfill="conservative", sched_interval=60, bf_interval=60, defer=defer)
    predicted = model_starts([TraceJob(k + 1, float(s - submits[0]), 60.0, 2, requested_time=60.0)
                              for k, s in enumerate(submits)], config)
    assert_loop_passes(submits, [int(p) + submits[0] for p in predicted], delay=3)


def assert_loop_passes(submits: list[int], starts: list[int], delay: int) -> None:
    """Starts (whole seconds) as slurmctld's background loop gives them to jobs submitted within
    ``delay`` seconds: at most two pass instants, ``delay`` or more apart, each job started within
    ``delay`` + 2 s of its submission and never before it."""
    instants = sorted(set(starts))
    assert len(instants) <= 2, (submits, starts)
    assert all(later - earlier >= delay for earlier, later in zip(instants, instants[1:], strict=False)), (submits, starts)
    assert all(0 <= start - submit <= delay + 2 for submit, start in zip(submits, starts, strict=True)), \
        (submits, starts)
