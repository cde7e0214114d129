"""The background window: selection, shift and scaling worked by hand."""

from __future__ import annotations

from djsb.workloads.job import TraceJob
from djsb.workloads.window import background_window


def test_window_selects_shifts_and_scales() -> None:
    jobs = [TraceJob(10 + k, 100.0 * k, 50.0, 32, requested_time=60.0, memory_mb=320.0, partition="p")
            for k in range(4)]
    window = background_window(jobs, start=100, count=2, warmup=50, cpu_scale=1 / 16, time_scale=0.5,
                               first_id=7)
    # jobs submitted at 100 and 200 (the first two at or after start=100); submit
    # (100 - 100) x 0.5 - 50 = -50 and (200 - 100) x 0.5 - 50 = 0; 32 x 1/16 = 2 CPUs and
    # 320 x 1/16 = 20 MB (memory per CPU kept); run and requested times unchanged; renumbered 7, 8
    assert [(j.job_id, j.submit, j.cpus, j.memory_mb, j.run_time, j.requested_time, j.partition)
            for j in window] == [(7, -50.0, 2, 20.0, 50.0, 60.0, None), (8, 0.0, 2, 20.0, 50.0, 60.0, None)]
    # scaled CPU counts never drop below 1, and keep their memory per CPU: 32 x 0.001 rounds up to
    # 1 CPU of 320 / 32 = 10 MB (not 320 x 0.001 = 0.32 MB)
    assert [(j.cpus, j.memory_mb) for j in background_window(jobs[:1], cpu_scale=0.001)] == [(1, 10.0)]
