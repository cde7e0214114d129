"""Inputs that would exhaust the machine, refused through the real command line under a memory limit:
one line naming file:line: key, exit 2, nothing created, and neither the memory nor the CPUs taken.

Each command runs in a subprocess whose address space is limited to 2 GiB (RLIMIT_AS, set in
preexec_fn): without the bounds these inputs allocate until MemoryError (a traceback, exit 1) or
hang at the limit. The 60 s timeout guards against a hang; it asserts no speed. Under the limit a
command may plan to fill half of it (djsb.machine.MEMORY_SHARE), so the largest counts are worked
by hand below: 1 GiB / 1 KiB a node = 1,048,576 nodes; 1 GiB / 2 KiB a job or a point = 524,288.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from djsb.machine import JOB_BYTES, NODE_BYTES, most_items, too_many, usable_cpus
from djsb.yamlnodes import ALIAS_VALUES

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs"
LIMIT = 2 << 30
HALF_LIMIT_NODES, HALF_LIMIT_JOBS = 1_048_576, 524_288
TOO_MUCH = "would need about {need} of memory, more than one command may take here (half the 2.0 GiB this " \
           "process may use): at most {most}"


def limited() -> None:
    """Run the child in at most LIMIT bytes of address space."""
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def djsb_limited(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "djsb", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=60, preexec_fn=limited, stdin=subprocess.DEVNULL)


def refused(done: subprocess.CompletedProcess[str], line: str) -> None:
    """Exit 2 after exactly one line on stderr, ``line``."""
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [line]


def written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


SIMULATE = (CONFIGS / "sweep-seeds.yaml").read_text().split("sweep:")[0]
"""A djsb simulate config: configs/sweep-seeds.yaml's base (500 generated jobs on 4 nodes of 4 cores)."""


def config_with(tmp_path: Path, source: str, old: str, new: str) -> Path:
    """configs/SOURCE (or SIMULATE) with ``old`` replaced by ``new`` (once, which must be there)."""
    text = SIMULATE if source == "simulate.yaml" else (CONFIGS / source).read_text()
    assert text.count(old) == 1
    return written(tmp_path / source, text.replace(old, new))


def test_the_bounds_under_the_limit_are_the_hand_worked_ones(tmp_path: Path) -> None:
    probe = "from djsb.machine import *; print(memory_bytes(), most_items(NODE_BYTES), most_items(JOB_BYTES))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          preexec_fn=limited)
    assert done.stdout.split() == [str(LIMIT), str(HALF_LIMIT_NODES), str(HALF_LIMIT_JOBS)], done.stderr


def test_a_count_at_the_bound_fits_and_one_more_does_not() -> None:
    most = most_items(NODE_BYTES)
    assert too_many(most, NODE_BYTES, "nodes") is None
    assert (too_many(most + 1, NODE_BYTES, "nodes") or "").startswith(f"{most + 1} nodes would need")
    assert most_items(JOB_BYTES) == most_items(NODE_BYTES) // 2


def test_a_billion_samples_are_refused_before_the_run_directory_exists(tmp_path: Path) -> None:
    path = config_with(tmp_path, "simulated-quick.yaml", "num_of_samples: 2", "num_of_samples: 1000000000")
    # each sample: reference 1 + 2 analytics, then 3 scenarios x (1 + 1 and 1 + 2) jobs = 18 jobs
    jobs = 18 * 1_000_000_000
    done = djsb_limited(tmp_path, "run", str(path), "-o", "out")
    refused(done, f"djsb: error: {path}:11: general.num_of_samples: {jobs} jobs "
                  + TOO_MUCH.format(need=f"{jobs * 2048 / 2**30:.1f} GiB", most=HALF_LIMIT_JOBS))
    assert not (tmp_path / "out").exists()
    refused(djsb_limited(tmp_path, "validate", str(path)), done.stderr.strip())


def test_a_billion_simulated_nodes_are_refused_by_validate(tmp_path: Path) -> None:
    path = config_with(tmp_path, "simulated-quick.yaml", "    nodes: 2\n", "    nodes: 1000000000\n")
    refused(djsb_limited(tmp_path, "validate", str(path)),
            f"djsb: error: {path}:22: job_module.options.nodes: 1000000000 nodes "
            + TOO_MUCH.format(need="953.7 GiB", most=HALF_LIMIT_NODES))


def test_a_billion_cluster_nodes_are_refused_before_simulate_makes_its_directory(tmp_path: Path) -> None:
    path = config_with(tmp_path, "simulate.yaml", "nodes: [{count: 4, cores: 4}]",
                       "nodes: [{count: 4, cores: 4}, {count: 999999999, cores: 1}]")
    # the groups are counted together: 4 + 999,999,999 nodes
    line = (f"djsb: error: {path}:11: cluster.nodes[1].count: 1000000003 nodes "
            + TOO_MUCH.format(need="953.7 GiB", most=HALF_LIMIT_NODES))
    refused(djsb_limited(tmp_path, "validate", str(path)), line)
    refused(djsb_limited(tmp_path, "simulate", str(path), "-o", "out"), line)
    assert not (tmp_path / "out").exists()


def test_a_billion_generated_jobs_are_refused(tmp_path: Path) -> None:
    path = config_with(tmp_path, "simulate.yaml", "n_jobs: 500,", "n_jobs: 1000000000,")
    refused(djsb_limited(tmp_path, "simulate", str(path), "-o", "out"),
            f"djsb: error: {path}:9: workload.params.n_jobs: 1000000000 jobs "
            + TOO_MUCH.format(need="1907.3 GiB", most=HALF_LIMIT_JOBS))
    assert not (tmp_path / "out").exists()


def test_a_sweep_of_a_billion_points_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    values = "[" + ", ".join(str(k) for k in range(1000)) + "]"
    text = SIMULATE
    path = written(tmp_path / "sweep.yaml", text + f"sweep:\n  grid:\n    seed: {values}\n"
                   f"    cluster.nodes.0.cores: {values}\n    cluster.nodes.0.count: {values}\n")
    line = text.count("\n") + 1
    refused(djsb_limited(tmp_path, "sweep", str(path), "-o", "out"),
            f"djsb: error: {path}:{line}: sweep: 1000000000 sweep points "
            + TOO_MUCH.format(need="1907.3 GiB", most=HALF_LIMIT_JOBS))
    assert not (tmp_path / "out").exists()


def test_more_sweep_workers_than_cpus_are_refused_before_any_starts(tmp_path: Path) -> None:
    cpus = usable_cpus()
    done = djsb_limited(tmp_path, "sweep", str(CONFIGS / "sweep-seeds.yaml"), "-o", "out", "--jobs", "99999")
    refused(done, f"djsb: error: --jobs: 99999 worker processes asked, but this process may run on {cpus} "
                  f"CPU(s): give --jobs {cpus} or fewer")
    assert not (tmp_path / "out").exists()


BOMB = """\
seed: 1
a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def test_an_alias_bomb_is_refused_where_its_aliases_pile_up(tmp_path: Path) -> None:
    path = written(tmp_path / "bomb.yaml", BOMB)
    # the file writes 30 entries: the top mapping, its 10 keys and 10 values, and a's 9 items;
    # expanded, list a holds 9 + 1 entries and each next list 9 times the one before, plus itself:
    # e = 1 + 9 x (1 + 9 x (1 + 9 x (1 + 9 x 10))) = 66,430; f = 1 + 9 e = 597,871 > 100,000
    assert ALIAS_VALUES == 100_000
    refused(djsb_limited(tmp_path, "simulate", str(path), "-o", "out"),
            f"djsb: error: {path}:7: f: aliases expand this value to 597871 entries (the file writes 30); "
            "at most 100000 may come from aliases")
    assert not (tmp_path / "out").exists()


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    path = written(tmp_path / "loop.yaml", "seed: 1\nloop: &a [1, *a]\n")
    refused(djsb_limited(tmp_path, "validate", str(path)),
            f"djsb: error: {path}:2: an alias refers to a value that contains it (it would never end)")


def test_a_few_aliases_are_still_read(tmp_path: Path) -> None:
    path = config_with(tmp_path, "simulate.yaml", "nodes: [{count: 4, cores: 4}]",
                       "nodes: [&group {count: 2, cores: 4}, *group]")
    done = djsb_limited(tmp_path, "validate", str(path))
    assert done.returncode == 0, done.stderr
    assert f"{path}: valid simulate config; 500 job(s) on 16 cores" in done.stdout


def test_one_node_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    """One node more than half the limit holds is refused, with the count the limit allows."""
    count = HALF_LIMIT_NODES + 1
    path = config_with(tmp_path, "simulate.yaml", "nodes: [{count: 4, cores: 4}]",
                       f"nodes: [{{count: {count}, cores: 1}}]")
    refused(djsb_limited(tmp_path, "validate", str(path)),
            f"djsb: error: {path}:11: cluster.nodes[0].count: {count} nodes "
            + TOO_MUCH.format(need="1.0 GiB", most=HALF_LIMIT_NODES))


def test_a_pool_of_a_billion_computers_is_refused_before_its_rooms_are_drawn(tmp_path: Path) -> None:
    path = config_with(tmp_path, "pool-baseline.yaml", "computers: 160,", "computers: 1000000000,")
    # 1e9 computers x 35 days at 1.5 KiB a computer-day; half of 2 GiB / 1,536 B = 699,050
    refused(djsb_limited(tmp_path, "pool", str(path), "-o", "out"),
            f"djsb: error: {path}:9: pool.generate.computers: 35000000000 computer-days (1000000000 computers x "
            "35 days) " + TOO_MUCH.format(need="50067.9 GiB", most=699_050))
    assert not (tmp_path / "out").exists()
