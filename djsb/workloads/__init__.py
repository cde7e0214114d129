"""Workloads for the built-in scheduler model: SWF and sacct readers, SWF/CSV writers, synthetic generators.

Every reader returns a :class:`~djsb.workloads.swf.Workload` of :class:`~djsb.workloads.job.TraceJob`
sorted by (submit, job_id), with every record it did not turn into a job listed with its line and reason
(the loop they share is :func:`~djsb.workloads.records.read_records`).
``csv_io`` (pandas) is not imported here, to keep ``import djsb.workloads`` light.
"""

from djsb.workloads.job import TraceJob
from djsb.workloads.machines import MachineSpec, read_machines
from djsb.workloads.records import SkippedRecord
from djsb.workloads.sacct import parse_sacct_parsable2, read_sacct
from djsb.workloads.swf import Workload, read_swf, write_swf
from djsb.workloads.synthetic import poisson_exponential, static_lognormal_004

__all__ = [
    "MachineSpec",
    "SkippedRecord",
    "TraceJob",
    "Workload",
    "parse_sacct_parsable2",
    "poisson_exponential",
    "read_machines",
    "read_sacct",
    "read_swf",
    "static_lognormal_004",
    "write_swf",
]
