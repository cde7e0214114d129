"""The model's decisions on a real trace, job by job, against a file the model wrote before.

KTH-SP2's first 2,500 jobs are replayed through ``djsb simulate``'s reader (:func:`load_experiment`)
under four policies that between them take every path of the passes: textbook EASY (event-driven
passes, unrounded limits, jobs killed at their limit), conservative backfilling with Slurm's default
intervals on 25 nodes x 4 cores (whole-node reservations planned node by node, jittered pass clocks,
a start latency), the ``marenostrum4`` preset (multifactor priority with Fair Tree, deferred main
passes) and sched/backfill's will-run planning with cons_tres node choice. Every job's start, end,
nodes and backfilled flag must equal tests/fixtures/golden/kth-2500-starts.csv.gz exactly, so a
refactoring of the model that changes any decision fails here.

The file is regenerated with ``python tests/test_model_golden_starts.py`` (from the repository root,
with the project importable). Regenerate it only in a commit that changes the model's behaviour on
purpose, and say in that commit why the starts moved; a commit that only moves code never touches it.
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
import time
from pathlib import Path

import pytest
from support import TraceFile

ROOT = Path(__file__).resolve().parents[1]
KTH = "KTH-SP2-1996-2.1-cln.swf.gz"
GOLDEN = ROOT / "tests" / "fixtures" / "golden" / "kth-2500-starts.csv.gz"
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


def experiment_file(name: str, directory: Path, kth: Path) -> Path:
    """The ``djsb simulate`` file of configuration ``name`` on the trace ``kth``, written into ``directory``."""
    at_time_limit, nodes, cores, policy = CONFIGS[name]
    path = directory / f"{name}.yaml"
    path.write_text(f"""\
seed: 1
workload: {{swf: {kth}, limit: {JOBS}, estimate: requested, at_time_limit: {at_time_limit}}}
cluster:
  nodes: [{{count: {nodes}, cores: {cores}, prefix: sp}}]
  partitions: [{{name: batch, max_time: 216000}}]
policy: {policy}
""")
    return path


def replay(name: str, directory: Path, kth: Path) -> list[tuple[str, ...]]:
    """One row per started job of configuration ``name``, as the golden file stores it (floats by
    ``repr``, which reads back exactly)."""
    from djsb.model import Simulation
    from djsb.simulate import load_experiment

    experiment = load_experiment(experiment_file(name, directory, kth))
    result = Simulation(experiment.jobs, experiment.cluster, experiment.scheduler, experiment.priority,
                        seed=experiment.seed).run()
    assert len(result.rejected) == 0
    jobs = result.jobs
    return [(name, str(job_id), repr(float(start)), repr(float(end)), nodes, str(bool(backfilled)))
            for job_id, start, end, nodes, backfilled in zip(
                jobs["job_id"], jobs["start"], jobs["end"], jobs["nodes"], jobs["backfilled"], strict=True)]


def golden_rows(name: str) -> list[tuple[str, ...]]:
    """The rows of configuration ``name`` in the golden file."""
    with gzip.open(GOLDEN, "rt", newline="") as source:
        return [tuple(row) for row in csv.reader(source) if row[0] == name]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_start_is_the_recorded_one(name: str, tmp_path: Path, trace: TraceFile) -> None:
    kth = trace(KTH)
    expected = golden_rows(name)
    assert len(expected) == JOBS
    actual = replay(name, tmp_path, kth)
    changed = [(want, got) for want, got in zip(expected, actual, strict=True) if want != got]
    assert not changed, f"{len(changed)} jobs differ under {name}; first: {changed[0]}"


def write_golden(directory: Path, kth: Path) -> None:
    """Replay every configuration and write the golden file (timing each replay); the same runs
    give the same bytes (no time stamp in the gzip header)."""
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(GOLDEN, "wb", mtime=0) as raw, io.TextIOWrapper(raw, newline="") as target:
        writer = csv.writer(target)
        writer.writerow(COLUMNS)
        for name in CONFIGS:
            began = time.perf_counter()
            writer.writerows(replay(name, directory, kth))
            print(f"{name}: {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(ROOT))
    from conftest import TRACES  # tests/ is this script's directory, first on sys.path

    with tempfile.TemporaryDirectory() as tmp:
        write_golden(Path(tmp), TRACES / KTH)
