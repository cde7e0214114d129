"""Scheduler outages: the intervals during which a scheduler did not answer the harness.

A controller that is down or restarting makes every command fail or hang; the retrying transport
(djsb.jobs.scheduler_base) keeps trying and, once a command answers again, reports the whole
interval as one :class:`Outage`. Measurements taken across one are not to be trusted: Slurm, for
example, stamps the end of a job that finished during an outage when the controller comes back, so
a 4 s job can be recorded as running 31 s. The driver writes every outage to the run
directory and marks the jobs and cells that overlap one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Outage:
    """``start``..``end`` (Unix seconds): from the first command that could not get an answer to
    the first that got one again (or to the moment the harness gave up), with how many attempts
    failed in between and the first error; 0 attempts: one command that answered, but so late
    that it must have waited for the scheduler (scheduler_base.SLOW_ANSWER_S)."""

    start: float
    end: float
    scheduler: str
    attempts: int
    command: str
    error: str

    @property
    def duration(self) -> float:
        return self.end - self.start


def overlaps(start: float, end: float, outage: Outage) -> bool:
    """The closed interval start..end shares at least one instant with the outage."""
    return start <= outage.end and outage.start <= end


def spans_outage(start: float, end: float, outages: Iterable[Outage]) -> bool:
    """Something that lasted from ``start`` to ``end`` overlapped at least one of ``outages``."""
    return any(overlaps(start, end, outage) for outage in outages)
