"""The containerized mini-cluster (docker/): a job runs in it, and the Slurm module drives it through
``docker exec`` as it would through SSH to a login node."""

from __future__ import annotations

import io
import posixpath
import tarfile

import pytest
from support import wait_until

from djsb.jobs import JobRequest, JobState
from djsb.transport import CommandResult, CommandTimeout
from job_modules.slurm import SlurmJobModule

pytestmark = pytest.mark.docker


class DockerExecTransport:
    """Commands run by ``sh -c`` inside a container; files go in and out as tar archives (the
    Docker API's way), as they would over SFTP to a login node."""

    def __init__(self, container: object) -> None:
        self.container = container

    def run(self, command: str, timeout: float = 60.0) -> CommandResult:
        wrapped = ["timeout", f"{timeout:g}", "sh", "-c", command]
        code, (out, err) = self.container.exec_run(wrapped, demux=True)  # type: ignore[attr-defined]
        if code == 124:
            raise CommandTimeout(f"command timed out after {timeout:g} s: {command}")
        return CommandResult(command, code, (out or b"").decode(), (err or b"").decode())

    def write_text(self, path: str, text: str) -> None:
        data = text.encode()
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            member = tarfile.TarInfo(posixpath.basename(path))
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
        self.container.put_archive(posixpath.dirname(path), archive.getvalue())  # type: ignore[attr-defined]

    def read_text(self, path: str) -> str | None:
        import docker.errors

        try:
            chunks, _ = self.container.get_archive(path)  # type: ignore[attr-defined]
        except docker.errors.NotFound:
            return None
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            member = tar.extractfile(posixpath.basename(path))
            return None if member is None else member.read().decode()

    def close(self) -> None:
        return None


def test_a_job_runs_in_the_container(slurm_container: object) -> None:
    transport = DockerExecTransport(slurm_container)
    submitted = transport.run("cd /tmp && sbatch --parsable --nodes=2 --ntasks=2 --output=/tmp/hello.out "
                              "--wrap='srun hostname'")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    def completed() -> bool:
        state = transport.run(f"squeue --noheader --states=all --jobs={job_id} --format=%T").stdout.strip()
        assert state in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "COMPLETED"), state
        return state == "COMPLETED"
    wait_until(completed, 60, f"job {job_id} to complete", interval=0.5)
    # both tasks ran on the container's host (every virtual node is this one host)
    lines = transport.run("cat /tmp/hello.out").stdout.split()
    assert lines == ["djsb-slurm", "djsb-slurm"]


def test_the_module_drives_the_containerized_cluster(slurm_container: object) -> None:
    module = SlurmJobModule({"partition": "shared"}, DockerExecTransport(slurm_container))
    request = JobRequest(name="docker-sim", app="simulation", total_tasks=2, cpus_per_task=1,
                         total_memory=64 << 20, exec_time=60, argv=("sleep", "60"),
                         stdout_path="/tmp/docker-sim.out", stderr_path="/tmp/docker-sim.err")
    job_id = module.submit(request)
    wait_until(lambda: module.poll([job_id])[job_id].state is JobState.RUNNING, 60, f"job {job_id} to run",
               interval=0.5)

    def task_states() -> list[str]:
        """ps states of the job's tasks (the container's own `sleep infinity` is not one)."""
        rows = [line.split() for line in module.run("ps -o stat=,args= -C sleep").stdout.splitlines()]
        return [row[0] for row in rows if row[1].endswith("sleep") and row[2:] == ["60"]]

    # srun starts the tasks just after the job starts
    wait_until(lambda: len(task_states()) >= 2, 60, "the job's two tasks", interval=0.2)
    module.suspend(job_id)
    assert module.poll([job_id])[job_id].state is JobState.SUSPENDED
    assert [stat[0] for stat in task_states()] == ["T", "T"]
    module.resume(job_id)
    assert module.poll([job_id])[job_id].state is JobState.RUNNING
    module.cancel(job_id)
    status = wait_until(lambda: (s := module.poll([job_id])[job_id]).state is JobState.CANCELLED and s, 60,
                        f"job {job_id} to be cancelled", interval=0.5)
    assert status.start is not None and status.end is not None and status.start <= status.end
