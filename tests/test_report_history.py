"""The timelines of djsb/report/history.py: step functions of job intervals, counted by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd

from djsb.report.history import queued_jobs, running_cpus

# A runs [0, 10) on 2 CPUs, B [5, 15) on 3 (submitted at 2), C [10, 20) on 1 (submitted at 3)
JOBS = pd.DataFrame({"job_id": [1, 2, 3], "submit": [0.0, 2.0, 3.0], "start": [0.0, 5.0, 10.0],
                     "end": [10.0, 15.0, 20.0], "cpus": [2, 3, 1]})


def test_running_cpus_count_the_jobs_between_their_start_and_end() -> None:
    instants = np.array([0.0, 5.0, 9.9, 10.0, 15.0, 20.0])
    assert running_cpus(JOBS, instants).tolist() == [2, 5, 5, 4, 1, 0]


def test_queued_jobs_count_the_jobs_between_their_submission_and_start() -> None:
    instants = np.array([0.0, 2.0, 3.0, 5.0, 9.0, 10.0])
    assert queued_jobs(JOBS, instants).tolist() == [0, 1, 2, 1, 1, 0]
