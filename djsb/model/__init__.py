"""The built-in scheduler model: a discrete-event model of a Slurm-like resource manager.

No I/O happens here: the model takes :class:`~djsb.workloads.job.TraceJob` lists and returns
DataFrames (see :mod:`djsb.simulate` for the experiment runner that reads and writes files).
"""

from djsb.model.cluster_spec import ClusterSpec, NodeSpec, PartitionSpec, QosSpec
from djsb.model.invariants import InvariantChecker, InvariantViolation
from djsb.model.result import SimulationResult
from djsb.model.scheduler import MARENOSTRUM4, TEXTBOOK, SchedulerConfig
from djsb.model.shape import JobShape
from djsb.model.simulation import ModelError, Simulation
from djsb.model.start_state import RunningAtStart, StartState

__all__ = [
    "MARENOSTRUM4", "ClusterSpec", "InvariantChecker", "InvariantViolation", "JobShape", "ModelError",
    "NodeSpec", "PartitionSpec", "QosSpec", "RunningAtStart", "SchedulerConfig", "Simulation",
    "SimulationResult", "StartState", "TEXTBOOK",
]
