"""The template to write a job module for a new scheduler (paper 001 sec. 2.2): copy this file.

The API (JobRequest, JobState, JobStatus, JobModule, CommandJobModule) lives in djsb.jobs; see
djsb/jobs/api.py for what each method must do. A command-based module gives the paper's
command-returning methods and the harness runs them through a transport (local shell or SSH):

- ``get_submit_command(request)``: the shell command that submits the job;
- ``get_poll_completion_command(submit_stdout, submit_stderr)``: a command that exits 0 once the
  job has completed (the paper's minimal polling);
- ``get_suspend_command(job_id)`` / ``get_resume_command(job_id)`` / ``get_cancel_command(job_id)``;
- optionally ``get_status_command(job_ids)`` with ``parse_status(stdout)``: one batched query for
  all the run's jobs that also reports the scheduler's own submit/start/end times. Without it the
  harness's clock stamps the times when it sees the state change;
- optionally ``find_by_token(tokens)``: the live jobs tagged with a submission token
  (``request.token``, e.g. in a job comment), so ``--resume`` cancels a job whose id a killed
  harness never recorded. Without it, ``--resume`` polls the ids the harness did record.

To support a new scheduler, copy :class:`ExampleJobModule` into a file, adapt the commands and the
``OPTIONS`` it accepts (read with djsb.yamlnodes' typed readers, so ``djsb validate`` reports a bad
option with its file and line), and point the config's ``job_module.name`` at the file's path; the
harness uses the class named by the file's ``MODULE`` attribute. Build every command with
``shlex.quote`` on each value (``shlex.join``); never paste a config value raw into a shell.
"""

from __future__ import annotations

import shlex

from djsb.jobs import CommandJobModule, JobRequest, Option
from djsb.jobs.options import as_name


class ExampleJobModule(CommandJobModule):
    """A starting point for a new scheduler: PBS-like commands, to copy and adapt."""

    name = "example"
    OPTIONS = {"queue": Option(as_name, None, "the queue to submit to (qsub -q)")}

    def get_submit_command(self, request: JobRequest) -> str:
        queue = ["-q", self.options["queue"]] if self.options["queue"] else []
        args = ["qsub", "-N", request.name, "-o", request.stdout_path, "-e", request.stderr_path, *queue,
                "-l", f"select={request.total_tasks}:ncpus={request.cpus_per_task}",
                "--", *request.argv]
        return shlex.join(args)

    def get_poll_completion_command(self, submit_stdout: str, submit_stderr: str) -> str:
        job_id = shlex.quote(submit_stdout.strip())
        return f"! qstat {job_id} >/dev/null 2>&1"

    def get_suspend_command(self, job_id: str) -> str:
        return shlex.join(["qsig", "-s", "suspend", job_id])

    def get_resume_command(self, job_id: str) -> str:
        return shlex.join(["qsig", "-s", "resume", job_id])

    def get_cancel_command(self, job_id: str) -> str:
        return shlex.join(["qdel", job_id])


MODULE = ExampleJobModule
