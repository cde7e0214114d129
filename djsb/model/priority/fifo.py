"""FIFO priority (Slurm ``PriorityType=priority/basic``): jobs run in submission order.

Every job gets priority 0, so the queue order falls to Slurm's tie-breakers: submit time, then job
id (priority_multifactor.html, order of evaluation). Priorities never change (``calc_period = 0``).
"""

from __future__ import annotations

from djsb.model.job import SimJob
from djsb.model.priority.base import PriorityPlugin
from djsb.model.priority.plugins import PRIORITY_PLUGINS, NoOptions, plugin_options
from djsb.yamlnodes import Located


class FifoPriority(PriorityPlugin):
    """First come, first served."""

    name = "fifo"
    calc_period = 0.0

    def on_submit(self, job: SimJob, now: float) -> None:
        """Constant priority: order is by submit time, then job id."""
        job.priority = 0.0
        job.factors = {}
        job.update_sort_key()


@PRIORITY_PLUGINS.register("fifo")
def read_fifo(node: Located, base: PriorityPlugin | None) -> PriorityPlugin:
    """``{plugin: fifo}``: no options."""
    plugin_options(node, NoOptions())
    return FifoPriority()
