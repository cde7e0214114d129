"""Jobs as a DataFrame and CSV."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from djsb.errors import TraceError
from djsb.workloads.csv_io import COLUMNS, jobs_to_frame, read_jobs_csv, write_jobs_csv
from djsb.workloads.gpus import GpuRequest
from djsb.workloads.job import TraceJob

JOBS = [
    TraceJob(1, 0.0, 10.5, 4, 60.0, 1024.0, 2, "alice", "proj", "batch", "normal", ()),
    TraceJob(2, 0.1, 0.0, 1, None, None, None, "u7", "g3", None, None, (1,)),
    TraceJob(3, 5.0, 1e-3, 8, 3600.0, None, 1, "bob", "proj", "gpu", None, (1, 2)),
]


def test_frame_columns_types_and_missing_values() -> None:
    frame = jobs_to_frame(JOBS)
    assert tuple(frame.columns) == COLUMNS == (
        "job_id", "submit", "run_time", "cpus", "requested_time", "memory_mb", "nodes", "user", "account",
        "partition", "qos", "depends_on")
    assert str(frame["job_id"].dtype) == "int64" and str(frame["cpus"].dtype) == "int64"
    assert str(frame["nodes"].dtype) == "Int64"
    assert math.isnan(frame["requested_time"][1]) and math.isnan(frame["memory_mb"][1])
    assert frame["partition"][1] is None and frame["depends_on"][2] == (1, 2)
    assert frame["run_time"].sum() == pytest.approx(10.501)
    assert len(jobs_to_frame([])) == 0


def test_csv_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "jobs.csv"
    write_jobs_csv(JOBS, out)
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert lines[2] == "2,0.1,0,1,,,,u7,g3,,,1"
    assert read_jobs_csv(out) == JOBS


def test_csv_read_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(TraceError) as err:
        read_jobs_csv(bad)
    assert err.value.line == 1
    bad.write_text(",".join(COLUMNS) + "\n1,0,1,x,,,,u,a,,,\n")
    with pytest.raises(TraceError) as err:
        read_jobs_csv(bad)
    assert err.value.line == 2


def test_a_workload_with_gpu_requests_has_a_gpus_column_of_sbatch_options(tmp_path: Path) -> None:
    jobs = [dataclasses.replace(JOBS[0], gpus=GpuRequest(2, "node", "a100")), JOBS[1],
            dataclasses.replace(JOBS[2], gpus=GpuRequest(4, "job")),
            TraceJob(4, 6.0, 1.0, 2, gpus=GpuRequest(1, "task")),
            TraceJob(5, 7.0, 1.0, 8, gpus=GpuRequest(2, "job", cpus_per_gpu=4, mem_per_gpu=1536))]
    out = tmp_path / "jobs.csv"
    write_jobs_csv(jobs, out)
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) + ",gpus"
    assert [line.rsplit(",", 1)[1] for line in lines[1:]] == [
        "--gpus-per-node=a100:2", "", "--gpus=4", "--gpus-per-task=1",
        "--gpus=2 --cpus-per-gpu=4 --mem-per-gpu=1536M"]
    assert read_jobs_csv(out) == jobs
    out.write_text(f"{lines[0]}\n{lines[1].replace('--gpus-per-node=a100:2', '--gres=gpu:tesla:3')}\n")
    assert read_jobs_csv(out)[0].gpus == GpuRequest(3, "node", "tesla")
    out.write_text(f"{lines[0]}\n{lines[1].replace('--gpus-per-node=a100:2', '--gpus=1 --mem=4G')}\n")
    with pytest.raises(TraceError, match="only --cpus-per-gpu and --mem-per-gpu"):
        read_jobs_csv(out)
    out.write_text(f"{lines[0]}\n{lines[1].replace('--gpus-per-node=a100:2', '--gpus-per-node=two')}\n")
    with pytest.raises(TraceError, match="--gpus-per-node=two: expected") as err:
        read_jobs_csv(out)
    assert err.value.line == 2


def test_a_workload_asking_for_reservations_and_with_names_has_their_columns(tmp_path: Path) -> None:
    # after gpus, in that order; empty for a job without
    jobs = [dataclasses.replace(JOBS[0], reservation="proj", gpus=GpuRequest(1, "job")),
            dataclasses.replace(JOBS[1], name="step", exclusive=True)]
    out = tmp_path / "jobs.csv"
    write_jobs_csv(jobs, out)
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) + ",gpus,reservation,name,exclusive"
    assert [line.split(",")[-3:] for line in lines[1:]] == [["proj", "", ""], ["", "step", "1"]]
    assert read_jobs_csv(out) == jobs
