"""The footprint mechanism of the rate model (djsb/appmodel.py point 6), its measured parameters
(djsb/footprint.py) and the simulated cluster's seeded work noise (djsb/noise.py, WorkNoise)."""

from __future__ import annotations

import csv
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from djsb import appmodel
from djsb.cli import main
from djsb.errors import ConfigError, InputError
from djsb.footprint import parse_footprint, read_footprint
from djsb.jobs.api import JobRequest, JobState
from djsb.model import ClusterSpec, InvariantChecker, NodeSpec, PartitionSpec, SchedulerConfig, Simulation
from djsb.model.shape import JobShape
from djsb.model.stream_rates import StreamRates
from djsb.noise import WorkNoise
from djsb.workloads.job import TraceJob
from job_modules.simulated import SimulatedJobModule

ROOT = Path(__file__).resolve().parent.parent
MEASURED = ROOT / "configs" / "footprint-epyc-2core.csv"
MIB = 2**20
CURVE = ((0.5, 3.0), (4.0, 1.0))
"""A working-set curve: 3x the memory bandwidth at half the cache, none from 4 caches on."""


# -- the working-set curve ---------------------------------------------------------------------------

def test_cache_gain_interpolates_in_log_working_set() -> None:
    curve = ((0.25, 4.0), (1.0, 2.0), (4.0, 1.0))
    cache = 32 * MIB
    # below the first point: its gain; beyond the last: memory's (1); no curve or no cache: 1
    assert appmodel.cache_gain(1 * MIB, cache, curve) == 4.0
    assert appmodel.cache_gain(1024 * MIB, cache, curve) == 1.0
    assert appmodel.cache_gain(16 * MIB, cache, ()) == 1.0
    assert appmodel.cache_gain(16 * MIB, 0, curve) == 1.0
    # W/C = 0.5 lies half-way (in log) from 0.25 to 1: 4 + (2 - 4) x ln 2 / ln 4 = 3
    assert appmodel.cache_gain(16 * MIB, cache, curve) == pytest.approx(3.0)
    # W/C = 2: 2 + (1 - 2) x ln 2 / ln 4 = 1.5
    assert appmodel.cache_gain(64 * MIB, cache, curve) == pytest.approx(1.5)


def model(rates: StreamRates) -> Simulation:
    spec = ClusterSpec((NodeSpec("n0", 2, None),), (PartitionSpec("p", oversubscribe="FORCE:4"),))
    return Simulation([], spec, SchedulerConfig(backfill="none", sched_interval=0, bf_interval=0),
                      checker=InvariantChecker(spec), rates=rates)


def analytics_end(simulation_mib: float, *, suspend_simulation: bool = False) -> float:
    """When a 1-thread analytics of 50 MiB and 6 s of work ends beside a 2-thread simulation of
    ``simulation_mib`` on one 2-core node (10 GB/s per thread, 15 per node, cache 100 MiB)."""
    sim = model(StreamRates(10.0, 15.0, 1.0, 100 * MIB, CURVE))
    sim.submit(TraceJob(1, 0.0, 1000.0, 2), JobShape(1, 2, memory_per_task=simulation_mib))
    if suspend_simulation:
        sim.suspend(1)
    sim.submit(TraceJob(2, 0.0, 6.0, 1), JobShape(1, 1, memory_per_task=50.0))
    sim.advance(100)
    end = sim.job(2).end
    assert end is not None
    return end


def test_a_larger_co_runner_footprint_slows_a_cache_resident_job() -> None:
    # The analytics alone sweeps 50 MiB = 0.5 cache: gain 3, 3 x min(10, 15) = 30 GB/s. Sharing
    # 2 cores with the simulation's 2 threads: 3 threads of g x min(2 x 10, 15) / 3 = 5g GB/s each,
    # where g is the gain of both footprints together: rate g / 6, the 6 s end at 36 / g.
    # 50 MiB beside it: W/C = 1, g = 3 - 2 ln 2 / ln 8 = 7/3, end 108/7; 4 GiB: g = 1, end 36.
    small, large = analytics_end(50.0), analytics_end(4096.0)
    assert small == pytest.approx(36 / (3 - 2 * math.log(2) / math.log(8)))
    assert large == pytest.approx(36.0)
    assert large > small
    # a stopped simulation keeps its 4 GiB resident but sweeps nothing: the analytics runs as alone
    assert analytics_end(4096.0, suspend_simulation=True) == pytest.approx(6.0)


def test_without_a_cache_model_the_footprint_changes_nothing() -> None:
    # the same jobs without a curve: 3 threads of min(20, 15) / 3 = 5 GB/s against 10 alone: rate
    # 0.5 and end 12 whatever the footprints
    for mib in (50.0, 4096.0):
        sim = model(StreamRates(10.0, 15.0))
        sim.submit(TraceJob(1, 0.0, 1000.0, 2), JobShape(1, 2, memory_per_task=mib))
        sim.submit(TraceJob(2, 0.0, 6.0, 1), JobShape(1, 1, memory_per_task=50.0))
        sim.advance(100)
        assert sim.job(2).end == pytest.approx(12.0)


# -- the footprint file ------------------------------------------------------------------------------

HEADER = "# provenance\nname,footprint_bytes,value,cv,samples\n"


def test_parse_footprint_reads_the_fitted_rows() -> None:
    text = (HEADER + "llc_bytes,0,1000,0,1\ncache_gain,4000,1,0.1,5\ncache_gain,500,3,0.2,5\n"
            "slowdown_ana_oversub,4000,3.2,0.3,3\ntimeslice_efficiency,0,0.9,0.2,6\nwork_cv,0,0.05,0,3\n")
    params = parse_footprint(text, "f.csv")
    assert params.llc_bytes == 1000
    assert params.cache_curve == ((0.5, 3.0), (4.0, 1.0))
    assert (params.timeslice_efficiency, params.work_cv) == (0.9, 0.05)
    assert params.measured("slowdown_ana_oversub") == {4000.0: (3.2, 0.3)}


@pytest.mark.parametrize(("body", "message"), [
    ("llc_bytes,0,1000,0,1\ncache_gain,4000,x,0,1\n", "f.csv:4.*cache_gain.*not a number"),
    ("llc_bytes,0,1000,0,1\ncache_gain,4000,1,0,1\nwork_cv,0,0.1,0,1\n", "timeslice_efficiency.*missing"),
    ("llc_bytes,0,1000,0,1\ncache_gain,4000,1,0,1\nwork_cv,0,0.1,0,1\ntimeslice_efficiency,0,1.2,0,1\n",
     "timeslice_efficiency.*\\(0, 1\\]"),
])
def test_parse_footprint_names_the_bad_row(body: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_footprint(HEADER + body, "f.csv")


def test_the_committed_measurement_parses() -> None:
    params = read_footprint(MEASURED)
    assert 0 < params.timeslice_efficiency <= 1 and params.work_cv > 0
    # normalised by its largest footprint, far beyond the cache
    assert params.cache_curve[-1][1] == 1.0 and params.cache_curve[-1][0] >= 4


def test_a_missing_footprint_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="footprint.*cannot read"):
        SimulatedJobModule({"footprint": str(tmp_path / "absent.csv")})


# -- noise -------------------------------------------------------------------------------------------

def test_work_noise_has_mean_one_and_the_given_cv() -> None:
    draws = _factors(0.2, 7, 20000)
    assert statistics.fmean(draws) == pytest.approx(1.0, abs=0.01)
    assert statistics.stdev(draws) / statistics.fmean(draws) == pytest.approx(0.2, abs=0.01)
    assert min(draws) > 0


def _factors(cv: float, seed: int, n: int) -> list[float]:
    noise = WorkNoise(cv, seed)
    return [noise.factor() for _ in range(n)]


def test_work_noise_is_reproducible_with_its_seed() -> None:
    assert _factors(0.3, 1, 50) == _factors(0.3, 1, 50)
    assert _factors(0.3, 1, 50) != _factors(0.3, 2, 50)
    assert _factors(0.0, 1, 5) == [1.0] * 5


def durations(**options: Any) -> list[float]:
    """Run times of three identical 1-CPU jobs of 10 s, one after the other, on a simulated node."""
    sim = SimulatedJobModule({"nodes": 1, "cores_per_node": 1, **options})
    clock = sim.clock
    assert clock is not None
    times = []
    for n in range(3):
        job = sim.submit(JobRequest(f"j{n}", "simulation", 1, 1, MIB, 10.0, ("stream",), "/nonexistent/out",
                                    "/nonexistent/err"))
        deadline = clock.now() + 1000
        status = sim.poll([job])[job]
        while not status.state.finished and clock.now() < deadline:
            clock.sleep(1)
            status = sim.poll([job])[job]
        assert status.state is JobState.COMPLETED and status.start is not None and status.end is not None
        times.append(status.end - status.start)
    return times


def test_the_simulated_cluster_draws_each_jobs_work() -> None:
    # without noise every sample repeats; with work_cv the runs differ, the same seed repeats them
    assert durations() == pytest.approx([10.0] * 3)
    noisy = durations(work_cv=0.2, seed=3)
    assert len(set(noisy)) == 3
    assert durations(work_cv=0.2, seed=3) == noisy
    assert durations(work_cv=0.2, seed=4) != noisy


def run_quick(tmp_path: Path, name: str, seed: int) -> list[dict[str, str]]:
    """summary.csv of configs/simulated-quick.yaml with 3 samples and each job's work drawn with CV 0.1."""
    text = (ROOT / "configs" / "simulated-quick.yaml").read_text()
    config = tmp_path / f"{name}.yaml"
    noise = f"    core_bandwidth: 10\n    work_cv: 0.1\n    seed: {seed}\n"
    config.write_text(text.replace("num_of_samples: 2", "num_of_samples: 3")
                      .replace("    core_bandwidth: 10\n", noise))
    assert main(["run", str(config), "-o", str(tmp_path / name)]) == 0
    with (tmp_path / name / "summary.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_noise_gives_intervals_that_the_seed_repeats(tmp_path: Path) -> None:
    first = run_quick(tmp_path, "a", seed=5)
    for row in first:
        for column in ("slowdown_s", "slowdown_a", "dynamicity"):
            assert float(row[f"{column}_ci95"]) > 0, (row["scenario"], row["n_a"], column)
    numbers = [{k: v for k, v in row.items() if k != "warnings"} for row in first]
    again = [{k: v for k, v in row.items() if k != "warnings"} for row in run_quick(tmp_path, "b", seed=5)]
    other = [{k: v for k, v in row.items() if k != "warnings"} for row in run_quick(tmp_path, "c", seed=6)]
    assert again == numbers
    assert other != numbers
