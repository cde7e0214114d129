"""Pool tasks, their executions ("runs") and why each run ended (paper 002 sec. II-A).

A good task completes once it runs ``runtime`` seconds without interruption (no checkpointing,
sec. IV of 002: the Windows Condor pool could not checkpoint); a bad ("miscreant" by nature) task
never completes and runs until it is evicted, abandoned by the policy or removed by its submitter
``removal_after`` seconds after submission. Each eviction returns the task to the queue.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class EndCause(str, enum.Enum):
    """Why a run ended. The first four are deallocations (the task goes back to the queue unless
    the abandon policy says otherwise); COMPLETED and REMOVED end the task, HORIZON the simulation."""

    USER = "user"          # an interactive user logged in (Condor preemption by resource policy)
    REBOOT = "reboot"      # the nightly reboot
    OTHER = "other"        # hardware / software failure, the computer left the pool
    LIMIT = "limit"        # the policy's run-time limit (I1(t), the dedicated D(m, d) maximum d)
    COMPLETED = "completed"
    REMOVED = "removed"    # the submitter removed the task (how X0 ends a bad task)
    HORIZON = "horizon"    # still running when the simulation stopped


DEALLOCATIONS = (EndCause.USER, EndCause.REBOOT, EndCause.OTHER, EndCause.LIMIT)


@dataclass(frozen=True, slots=True)
class Task:
    """A task of the workload: ``runtime`` is None for a bad task, which never completes."""

    task_id: int
    submit: float
    runtime: float | None
    removal_after: float = float("inf")

    @property
    def good(self) -> bool:
        return self.runtime is not None


@dataclass(frozen=True, slots=True)
class Run:
    """One execution of a task on a computer, ``[start, end)``, and why it ended."""

    start: float
    end: float
    cause: EndCause
    computer: int = 0  # index in the pool; dedicated computer i is -1 - i

    @property
    def duration(self) -> float:
        return self.end - self.start


History = Sequence[Run]
"""A task's runs so far, oldest first: what an abandon policy decides on."""


def deallocations(history: History, ignore: EndCause | None = None) -> int:
    """How many runs ended in a deallocation, not counting those of cause ``ignore``."""
    return sum(1 for run in history if run.cause in DEALLOCATIONS and run.cause is not ignore)


def accrued_time(history: History, ignore: EndCause | None = None) -> float:
    """Seconds run over all executions, not counting runs that ended for cause ``ignore``."""
    return sum(run.duration for run in history if run.cause is not ignore)


def wasted_time(history: History) -> float:
    """Seconds run without completing the task: every run but a completing one."""
    return sum(run.duration for run in history if run.cause is not EndCause.COMPLETED)


def longest_run(history: History) -> float:
    """The longest single execution in seconds (0 without runs): I1's "individual time"."""
    return max((run.duration for run in history), default=0.0)
