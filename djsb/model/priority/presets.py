"""Named policy presets, registered in ``PRESETS`` (djsb/model/priority/plugins.py).

``marenostrum4``: paper 004 Table 3.2 (weights: fair share 100000, age 100000, job size 10000)
and Table 3.3 (PriorityMaxAge 10 days; scheduler options, see ``scheduler.MARENOSTRUM4``) with
Fair Tree fair share (004 sec. 3.2). Weights the table does not list (QoS, partition) are 0.
The job size factor is not inverted: 004 sec. 3.4 reads 650 CPUs of LUMI's 360448 as adding
"about 18" to the priority, 650 / 360448 * 10000 = 18.0, i.e. s = r / S.
Decay half-life and calc period keep Slurm's defaults (7 days, 5 minutes).

``textbook``: FIFO order and Mu'alem & Feitelson's EASY backfilling (``scheduler.TEXTBOOK``: no
window, no test limit, no intervals, no rounding); with ``scheduler: {backfill: conservative}``
their conservative backfilling. Use it for any experiment that claims to be EASY; Slurm's own
defaults (``SchedulerConfig()``) remain for Slurm-like runs.

``fcfs``, ``psp`` and ``psp_aging``: the three policies of Table 4 of paper 000 (FCFS, PSP without
aging, PSP+AGING with its 150 s step). Paper 000 ran them in the Slurm simulator, which coded PSP
into Slurm's priority plugin and kept Slurm's scheduler, so all three keep Slurm's default
scheduler options (``SchedulerConfig()``, EASY-like backfill) and differ only in priority.
"""

from __future__ import annotations

from djsb.errors import ConfigError
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.fifo import FifoPriority
from djsb.model.priority.multifactor import DAY, MultifactorPriority, MultifactorWeights
from djsb.model.priority.plugins import PRESETS
from djsb.model.priority.psp import PspAgingPriority
from djsb.model.scheduler import MARENOSTRUM4, TEXTBOOK, SchedulerConfig
from djsb.registry import UnknownName

MARENOSTRUM4_WEIGHTS = MultifactorWeights(age=100000, fairshare=100000, job_size=10000)


@PRESETS.register("marenostrum4")
def marenostrum4() -> tuple[MultifactorPriority, SchedulerConfig]:
    """Priority plugin and scheduler options of MareNostrum 4 (paper 004 Tables 3.2-3.3)."""
    return MultifactorPriority(MARENOSTRUM4_WEIGHTS, max_age=10 * DAY, fairshare="fair_tree"), MARENOSTRUM4


@PRESETS.register("textbook")
def textbook() -> tuple[FifoPriority, SchedulerConfig]:
    """First come, first served with textbook EASY backfilling (Mu'alem & Feitelson 2001)."""
    return FifoPriority(), TEXTBOOK


@PRESETS.register("fcfs")
def fcfs() -> tuple[FifoPriority, SchedulerConfig]:
    """FCFS of paper 000 (scenarios 1 and 4 of Table 4): submit order, Slurm's scheduler."""
    return FifoPriority(), SchedulerConfig()


@PRESETS.register("psp")
def psp() -> tuple[PspAgingPriority, SchedulerConfig]:
    """PSP without aging of paper 000 (scenarios 2 and 5 of Table 4), Slurm's scheduler."""
    return PspAgingPriority(aging=False), SchedulerConfig()


@PRESETS.register("psp_aging")
def psp_aging() -> tuple[PspAgingPriority, SchedulerConfig]:
    """PSP+AGING of paper 000 (scenarios 3 and 6 of Table 4), 150 s step, Slurm's scheduler."""
    return PspAgingPriority(time_step=150.0), SchedulerConfig()


def preset(name: str) -> tuple[PriorityPlugin, SchedulerConfig]:
    """A fresh (priority plugin, scheduler options) pair for a registered preset name."""
    try:
        return PRESETS.get(name)()
    except UnknownName as exc:
        raise ConfigError(str(exc), key="policy.preset") from None
