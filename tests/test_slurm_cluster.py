"""The Slurm job module against the real mini-cluster: submit, poll, suspend (state T), colocate,
resume, cancel, scheduler times against this machine's clock, and a slurmctld restart mid-poll."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster, job_process_states
from support import wait_until

from djsb.jobs import JobRequest, JobState, JobStatus
from djsb.transport import CommandResult, LocalTransport
from job_modules.slurm import SlurmJobModule

pytestmark = pytest.mark.slurm
MIB = 1 << 20


def request(tmp_path: Path, name: str, tasks: int, cpus: int, seconds: float, **extra: object) -> JobRequest:
    return JobRequest(name=name, app=str(extra.pop("app", "simulation")), total_tasks=tasks, cpus_per_task=cpus,
                      total_memory=tasks * 32 * MIB, exec_time=seconds, argv=("sleep", f"{seconds:g}"),
                      stdout_path=str(tmp_path / f"{name}.out"), stderr_path=str(tmp_path / f"{name}.err"),
                      **extra)  # type: ignore[arg-type]


def running_tasks(job_id: str) -> int:
    """How many of the job's processes are its tasks (``sleep``, the argv of :func:`request`)."""
    count = 0
    for pid in job_process_states(job_id):
        try:
            count += Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"
        except OSError:
            continue  # it ended while we looked
    return count


def wait_for(module: SlurmJobModule, job_id: str, *states: JobState, timeout: float = 60) -> JobStatus:
    def reached() -> JobStatus | None:
        status = module.poll([job_id])[job_id]
        return status if status.state in states else None
    return wait_until(reached, timeout, f"job {job_id} to be {' or '.join(s.name for s in states)}", interval=0.5)


@pytest.fixture
def module(slurm_cluster: SlurmCluster) -> SlurmJobModule:
    return SlurmJobModule({"partition": "shared", "retry_for": 120}, LocalTransport())


def test_stop_and_continue_with_a_colocated_analytics(module: SlurmJobModule, tmp_path: Path) -> None:
    before = time.time()
    sim_id = module.submit(request(tmp_path, "sim", 2, 1, 60))
    after = time.time()
    sim = wait_for(module, sim_id, JobState.RUNNING)
    # Slurm's times are whole seconds of the same clock as ours
    assert sim.submit is not None and sim.start is not None
    assert math.floor(before) <= sim.submit <= math.ceil(after)
    assert sim.submit <= sim.start <= time.time() and sim.end is None
    assert len(sim.nodes) >= 1
    wait_until(lambda: running_tasks(sim_id) == 2, 60, "srun to start the job's 2 tasks")
    assert all(not stat == "T" for stat in job_process_states(sim_id).values())

    module.suspend(sim_id)
    suspended = module.poll([sim_id])[sim_id]
    assert suspended.state is JobState.SUSPENDED
    stopped = job_process_states(sim_id)
    assert stopped and all(stat == "T" for stat in stopped.values()), stopped

    ana_id = module.submit(request(tmp_path, "ana", 1, 1, 2, app="analytics", colocate_with=sim_id,
                                   oversubscribe=True))
    ana = wait_for(module, ana_id, JobState.COMPLETED)
    assert set(ana.nodes) <= set(sim.nodes)
    assert ana.start is not None and ana.end is not None
    assert ana.end - ana.start >= 2
    module.resume(sim_id)
    assert module.poll([sim_id])[sim_id].state is JobState.RUNNING
    assert all(not stat == "T" for stat in job_process_states(sim_id).values())

    module.cancel(sim_id)
    cancelled = wait_for(module, sim_id, JobState.CANCELLED)
    assert cancelled.start is not None and cancelled.end is not None
    assert cancelled.start <= cancelled.end <= time.time() + 1
    # one poll answers both jobs; the paper's minimal polling command agrees the job is over
    both = module.poll([sim_id, ana_id])
    assert both[sim_id].state is JobState.CANCELLED and both[ana_id].state is JobState.COMPLETED
    done = module.run(module.get_poll_completion_command(f"{sim_id}\n", ""), check=False)
    assert done.returncode == 0
    module.cancel(sim_id)  # a job already gone: no error


def test_multinode_colocation_and_oversubscription(module: SlurmJobModule, tmp_path: Path) -> None:
    # the simulation fills 2 whole nodes (2 tasks x 2 CPUs); the analytics (2 tasks x 1 CPU) must
    # share them: it runs only because --oversubscribe lets it on the FORCE-shared partition
    sim_id = module.submit(request(tmp_path, "sim2", 2, 2, 30))
    sim = wait_for(module, sim_id, JobState.RUNNING)
    assert len(sim.nodes) == 2
    ana_id = module.submit(request(tmp_path, "ana2", 2, 1, 1, app="analytics", colocate_with=sim_id,
                                   oversubscribe=True))
    ana = wait_for(module, ana_id, JobState.COMPLETED, JobState.FAILED)
    assert ana.state is JobState.COMPLETED
    assert ana.nodes == sim.nodes
    module.cancel(sim_id)
    wait_for(module, sim_id, JobState.CANCELLED)


def test_survives_a_slurmctld_restart(slurm_cluster: SlurmCluster, module: SlurmJobModule,
                                      tmp_path: Path) -> None:
    job_id = module.submit(request(tmp_path, "restart", 1, 1, 40))
    wait_for(module, job_id, JobState.RUNNING)
    failures: list[BaseException] = []
    seen: list[JobState] = []

    def keep_polling() -> None:
        try:
            for _ in range(10):
                seen.append(module.poll([job_id])[job_id].state)
                time.sleep(0.5)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    poller = threading.Thread(target=keep_polling)
    poller.start()
    slurm_cluster.control("restart-ctld")
    poller.join(timeout=180)
    assert not failures, failures
    # the job survived the restart (its state was saved) and the module saw it throughout
    assert seen and set(seen) == {JobState.RUNNING}
    module.cancel(job_id)
    wait_for(module, job_id, JobState.CANCELLED)


class ForgetfulTransport(LocalTransport):
    """The local transport, with squeue's lines about ``forgotten`` jobs dropped: what squeue says
    once slurmctld purged them (MinJobAge), without waiting for the purge."""

    def __init__(self, forgotten: set[str]) -> None:
        self.forgotten = forgotten

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        result = super().run(command, timeout)
        if " squeue " not in f" {command} ":
            return result
        kept = [line for line in result.stdout.splitlines() if line.split("|")[0] not in self.forgotten]
        return CommandResult(command, result.returncode, "".join(f"{line}\n" for line in kept), result.stderr)


def test_sacct_answers_for_jobs_the_controller_forgot(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    transport = ForgetfulTransport(set())
    module = SlurmJobModule({"partition": "shared"}, transport)
    if not module.has_accounting():
        pytest.skip("no accounting on this cluster (start it with DJSB_SLURM_ACCOUNTING=1)")
    job_id = module.submit(request(tmp_path, "accounted", 1, 1, 1))
    seen = wait_for(module, job_id, JobState.COMPLETED)
    transport.forgotten.add(job_id)
    # squeue no longer knows the job; a module that never saw it (a resumed harness) asks sacct
    fresh = SlurmJobModule({"partition": "shared"}, transport)
    accounted = wait_until(lambda: (lambda s: s if s.state is not JobState.UNKNOWN else None)(
        fresh.poll([job_id])[job_id]), 30, "sacct to know the job (slurmdbd may lag)", interval=0.5)
    assert accounted.state is JobState.COMPLETED and accounted.exit_code == 0
    assert (accounted.submit, accounted.start, accounted.end, accounted.nodes) == (
        seen.submit, seen.start, seen.end, seen.nodes)
