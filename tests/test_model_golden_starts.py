"""The model's decisions on a real trace and on a committed synthetic one, job by job, against files
the model wrote before.

KTH-SP2's first 2,500 jobs (read in place from ../shared, so skipped without it) and a synthetic
2,500-job trace committed under tests/fixtures/golden (so every clone runs this test) are replayed through ``djsb simulate``'s reader (:func:`load_experiment`)
under four policies that between them take every path of the passes: textbook EASY (event-driven
passes, unrounded limits, jobs killed at their limit), conservative backfilling with Slurm's default
intervals on 25 nodes x 4 cores (whole-node reservations planned node by node, jittered pass clocks,
a start latency), the ``marenostrum4`` preset (multifactor priority with Fair Tree, deferred main
passes) and sched/backfill's will-run planning with cons_tres node choice. Every job's start, end,
nodes and backfilled flag must equal tests/fixtures/golden/kth-2500-starts.csv.gz (and
synthetic-2500-starts.csv.gz) exactly, so a refactoring of the model that changes any decision fails here.

The synthetic trace is not a slice of KTH-SP2 (the archive's traces are read in place, never copied into
the project): :func:`synthetic_jobs` draws a busy 100-processor machine's workload from a seeded generator
(arrivals, widths up to the whole machine, lognormal run times, requests that over- and under-estimate,
40 users in 8 groups), written once by ``python tests/test_model_golden_starts.py --synthetic-trace``.
The golden files are regenerated with ``python tests/test_model_golden_starts.py`` (from the repository
root, with the project importable). Regenerate it only in a commit that changes the model's behaviour on
purpose, and say in that commit why the starts moved; a commit that only moves code never touches it.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import random
import sys
import time
from pathlib import Path

import pytest
from support import TraceFile

from djsb.workloads.job import TraceJob
from djsb.workloads.swf import read_swf, write_swf

ROOT = Path(__file__).resolve().parents[1]
KTH = "KTH-SP2-1996-2.1-cln.swf.gz"
FIXTURES = ROOT / "tests" / "fixtures" / "golden"
SYNTHETIC = FIXTURES / "synthetic-2500.swf.gz"
GOLDEN = {"kth": FIXTURES / "kth-2500-starts.csv.gz", "synthetic": FIXTURES / "synthetic-2500-starts.csv.gz"}
JOBS = 2500
COLUMNS = ("config", "job_id", "start", "end", "nodes", "backfilled")

CONFIGS: dict[str, tuple[str, int, int, str]] = {
    # name: (at_time_limit, nodes, cores per node, policy section)
    "easy": ("kill", 100, 1, "{preset: textbook}"),
    "conservative": ("run", 25, 4, "{scheduler: {backfill: conservative, bf_node_reservations: true, "
                                   "pass_jitter: true, start_latency: 2}}"),
    "marenostrum4": ("run", 100, 1, "{preset: marenostrum4}"),
    "will_run": ("kill", 25, 4, "{scheduler: {backfill: conservative, sched_interval: 0, bf_interval: 0, "
                                "bf_resolution: 60, bf_will_run: true, node_select: cons_tres}}"),
}
"""Each policy on KTH-SP2 (100 one-processor nodes; its largest request, 60 h, is MaxTime)."""


def synthetic_jobs(seed: int = 1) -> list[TraceJob]:
    """A busy 100-processor machine's 2,500 jobs: Poisson arrivals (mean 600 s apart: an offered
    load of 0.72 with the kills at the limit), widths a power of two up to 64 or the whole machine,
    lognormal run times capped at the 60 h MaxTime, requests rounded up to minutes from 0.5x to 8x the
    run time (so some jobs reach their limit), 40 users in 8 groups."""
    rng = random.Random(seed)
    jobs: list[TraceJob] = []
    submit = 0.0
    for job_id in range(1, JOBS + 1):
        submit += round(rng.expovariate(1 / 600))
        cpus = 100 if rng.random() < 0.02 else 2 ** rng.randint(0, 6)
        run_time = float(min(216000, round(math.exp(rng.gauss(6.5, 1.6)))))
        requested = float(min(216000, 60 * math.ceil(run_time * rng.choice((0.5, 1, 1.5, 2, 4, 8)) / 60 + 1)))
        user = rng.randint(1, 40)
        jobs.append(TraceJob(job_id=job_id, submit=submit, run_time=run_time, cpus=cpus,
                             requested_time=requested, user=f"u{user}", account=f"g{user % 8 + 1}"))
    return jobs


def experiment_file(name: str, directory: Path, trace: Path) -> Path:
    """The ``djsb simulate`` file of configuration ``name`` on ``trace``, written into ``directory``."""
    at_time_limit, nodes, cores, policy = CONFIGS[name]
    path = directory / f"{name}.yaml"
    path.write_text(f"""\
seed: 1
workload: {{swf: {trace}, limit: {JOBS}, estimate: requested, at_time_limit: {at_time_limit}}}
cluster:
  nodes: [{{count: {nodes}, cores: {cores}, prefix: sp}}]
  partitions: [{{name: batch, max_time: 216000}}]
policy: {policy}
""")
    return path


def replay(name: str, directory: Path, trace: Path) -> list[tuple[str, ...]]:
    """One row per started job of configuration ``name``, as the golden file stores it (floats by
    ``repr``, which reads back exactly)."""
    from djsb.model import Simulation
    from djsb.simulate import load_experiment

    experiment = load_experiment(experiment_file(name, directory, trace))
    result = Simulation(experiment.jobs, experiment.cluster, experiment.scheduler, experiment.priority,
                        seed=experiment.seed).run()
    assert len(result.rejected) == 0
    jobs = result.jobs
    return [(name, str(job_id), repr(float(start)), repr(float(end)), nodes, str(bool(backfilled)))
            for job_id, start, end, nodes, backfilled in zip(
                jobs["job_id"], jobs["start"], jobs["end"], jobs["nodes"], jobs["backfilled"], strict=True)]


def golden_rows(source_name: str, name: str) -> list[tuple[str, ...]]:
    """The rows of configuration ``name`` in the golden file of trace ``source_name``."""
    with gzip.open(GOLDEN[source_name], "rt", newline="") as source:
        return [tuple(row) for row in csv.reader(source) if row[0] == name]


def assert_recorded_starts(source_name: str, name: str, directory: Path, trace: Path) -> None:
    """Every start of configuration ``name`` on ``trace`` equals the golden file's."""
    expected = golden_rows(source_name, name)
    assert len(expected) == JOBS
    actual = replay(name, directory, trace)
    changed = [(want, got) for want, got in zip(expected, actual, strict=True) if want != got]
    assert not changed, f"{len(changed)} jobs differ under {name} on {source_name}; first: {changed[0]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_start_on_kth_is_the_recorded_one(name: str, tmp_path: Path, trace: TraceFile) -> None:
    assert_recorded_starts("kth", name, tmp_path, trace(KTH))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_start_on_the_committed_trace_is_the_recorded_one(name: str, tmp_path: Path) -> None:
    assert_recorded_starts("synthetic", name, tmp_path, SYNTHETIC)


def test_the_committed_trace_is_the_generators() -> None:
    """The fixture is what :func:`synthetic_jobs` draws, so its provenance is this file."""
    assert read_swf(SYNTHETIC).jobs == synthetic_jobs()


def write_golden(source_name: str, directory: Path, trace: Path) -> None:
    """Replay every configuration on ``trace`` and write its golden file (timing each replay); the
    same runs give the same bytes (no time stamp in the gzip header)."""
    target_path = GOLDEN[source_name]
    target_path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(target_path, "wb", mtime=0) as raw, io.TextIOWrapper(raw, newline="") as target:
        writer = csv.writer(target)
        writer.writerow(COLUMNS)
        for name in CONFIGS:
            began = time.perf_counter()
            writer.writerows(replay(name, directory, trace))
            print(f"{source_name} {name}: {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(ROOT))
    from conftest import TRACES  # tests/ is this script's directory, first on sys.path

    if "--synthetic-trace" in sys.argv:
        write_swf(synthetic_jobs(), SYNTHETIC)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            write_golden("kth", Path(tmp), TRACES / KTH)
            write_golden("synthetic", Path(tmp), SYNTHETIC)
