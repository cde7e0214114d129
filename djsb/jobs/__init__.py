"""The job-module API (djsb.jobs.api), its options (djsb.jobs.options) and loader (djsb.jobs.loader).

The harness depends on this package only; the concrete modules in job_modules/ depend on it and are
found by name through the registry.
"""

from djsb.jobs.api import CommandJobModule, JobModule, JobRequest, JobState, JobStatus
from djsb.jobs.options import Option, OptionValues, option_error, read_options

__all__ = ["CommandJobModule", "JobModule", "JobRequest", "JobState", "JobStatus", "Option", "OptionValues",
           "option_error", "read_options"]
