"""Job dependencies the model enforces: Slurm's ``afterok`` and Autosubmit's submit-on-parent-end.

A trace's own ``TraceJob.depends_on`` stays informational (its submit times already follow the
dependencies); a workflow hands the model explicit :class:`Dependency` records instead, so replaying
a trace costs nothing extra.

Two ways to wait for parents (paper 004 sec. 3.3.2):

* ``on_parent_end=False`` (Slurm, ``sbatch --dependency=afterok:...``): the job is submitted at its
  submit time but is not eligible, hence never considered by a pass, until every parent COMPLETED;
  its wait (start - submit) includes that hold, as ``sacct`` reports it.
* ``on_parent_end=True`` (Autosubmit): the job is submitted exactly when its last parent completes,
  so its submit time equals that parent's end time and its wait is pure queue time. The thesis'
  simulator could not do this and precomputed submit times instead (004 sec. 3.3.2, fig. 3.7).

A parent that ends in any other state (TIMEOUT, CANCELLED) or is rejected cancels its dependents and
theirs in turn (Slurm with ``kill_invalid_depend``; Autosubmit never submits them); each is listed in
the result's ``rejected`` table with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Dependency:
    """The parents a job waits for (their job ids) and how it waits (see the module docstring)."""

    parents: tuple[int, ...]
    on_parent_end: bool = False
