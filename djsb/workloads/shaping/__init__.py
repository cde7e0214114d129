"""Job shaping (paper 003 sec. 3): fit a trace's jobs to a partition layout they were not recorded
under, keeping each job's geometry (cores x time limit).

A job goes to its own partition (the trace's queue) when the layout has it and its geometry fits
there; a job without one, or whose queue the layout lacks, goes to the first partition in layout
order where it fits unchanged. A job that fits nowhere is handed to the shaping policy
(``workload.shaping.policy``, one policy per module of this package): ``reject`` drops it,
``target`` reshapes it toward one partition, ``factor`` multiplies its cores by F and divides its
time by F. Every job moved, shaped or rejected is listed with its geometry before and after.
"""

from djsb.workloads.shaping.apply import ShapingRecord, records_frame, shape_workload
from djsb.workloads.shaping.geometry import Limits
from djsb.workloads.shaping.policy import SHAPING_POLICIES, ShapingPolicy, read_shaping

__all__ = ["SHAPING_POLICIES", "Limits", "ShapingPolicy", "ShapingRecord", "read_shaping", "records_frame",
           "shape_workload"]
