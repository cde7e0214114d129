"""The ``pool`` point runner: one run of a cycle-stealing pool config (djsb/pool/, paper 002)."""

from djsb.pool.runner import run_tree
from djsb.sweep.runners import POINT_RUNNERS

POINT_RUNNERS.register("pool")(run_tree)
