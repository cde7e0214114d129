"""``djsb validate CONFIG``: which kind of config a file is, checked by that kind's own reader.

Every command reads its own kind of file; this tells them apart by their top-level sections and
runs the matching ``validate_*`` (nothing runs, no job is submitted, no model is replayed):

========== ============================================== =========================================
kind       told by                                        checked by
========== ============================================== =========================================
sweep      a ``sweep`` section                            the sweep spec, its ``sweep.slurm``
                                                          settings, then its first point by its
                                                          runner's kind (simulate, workflow, pool)
run        ``simulation`` / ``analytics`` / ``general`` / djsb.config, and the job module opened
           ``job_module``                                 here with its options
pool       a ``pool`` section                             djsb.pool.config
calibrate  a ``slurm`` section (no ``cluster``)           djsb.calibrate.spec
wrappers   a ``workflow`` section                         djsb.simulate.experiment (a simulate config
                                                          with a workflow: ``djsb wrappers``)
simulate   ``workload`` / ``cluster`` / ``policy``        djsb.simulate.experiment
========== ============================================== =========================================

It reads every kind, so it sits above every reader (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from djsb.calibrate.spec import load_calibration
from djsb.config import config_from_tree, open_module
from djsb.pool.config import read_experiment
from djsb.simulate.experiment import load_experiment
from djsb.sweep.slurm_array import read_settings
from djsb.sweep.spec import sweep_from_tree
from djsb.transport import LocalTransport
from djsb.workloads.records import skip_reasons
from djsb.yamlnodes import Located, load_yaml

RUN_KEYS = frozenset({"simulation", "analytics", "general", "job_module"})
SIMULATE_KEYS = frozenset({"workload", "cluster", "policy"})


@dataclass(frozen=True)
class Validated:
    """What ``djsb validate`` read: the file's kind and a line about its contents."""

    kind: str
    details: str

    def line(self, path: Path) -> str:
        return f"{path}: valid {self.kind} config; {self.details}"


def validate_run(path: Path, root: Located) -> Validated:
    """A ``djsb run`` experiment, with its job module built (its options checked)."""
    config = config_from_tree(root)
    open_module(config, LocalTransport()).close()
    general = config.general
    cells = len(general.scenarios) * len(general.num_of_dyn_analysis) * general.num_of_samples
    return Validated("run", f"job module {config.job_module.name}, {general.num_of_samples} sample(s), "
                            f"{cells} execution cell(s)")


def validate_simulate(path: Path, root: Located) -> Validated:
    """A ``djsb simulate`` experiment (its workload read, its cluster and policy built)."""
    experiment = load_experiment(path, root)
    skipped = experiment.skipped
    dropped = f", {len(skipped)} trace record(s) skipped ({skip_reasons(skipped)})" if skipped else ""
    return Validated("simulate", f"{len(experiment.jobs)} job(s) on {experiment.cluster.total_cores} cores"
                                 f"{dropped}")


def validate_wrappers(path: Path, root: Located) -> Validated:
    """A simulate experiment with a ``workflow`` section (``djsb wrappers``, ``djsb simulate``)."""
    experiment = load_experiment(path, root)
    plan = experiment.workflow
    if plan is None:
        raise root.error("missing section 'workflow' (the workflow to evaluate)")
    return Validated("wrappers", f"strategies {', '.join(plan.strategies)} on "
                                 f"{experiment.cluster.total_cores} cores (also a simulate config)")


def validate_pool(path: Path, root: Located) -> Validated:
    """A ``djsb pool`` experiment."""
    experiment = read_experiment(root, path.parent)
    return Validated("pool", f"{len(experiment.tasks)} task(s) on {len(experiment.pool.clusters)} cluster(s)")


def validate_calibrate(path: Path, root: Located) -> Validated:
    """A ``djsb calibrate`` file."""
    calibration = load_calibration(path)
    return Validated("calibrate", f"{len(calibration.jobs)} job(s) on partition {calibration.partition}")


POINT_KINDS: dict[str, Callable[[Path, Located], Validated]] = {
    "simulate": validate_simulate, "workflow": validate_wrappers, "pool": validate_pool}
"""How a sweep runner's point is checked (a runner not listed: the sweep spec only). Not every
point is: a point loads its workload, and a grid may have thousands; the first point with each value
of each swept key is (SweepSpec.first_points_of_each_value), so every value the sweep sets is."""


def validate_sweep(path: Path, root: Located) -> Validated:
    """A ``djsb sweep`` (or ``djsb pool``) config: the spec, its Slurm settings, then the first
    point with each value of each swept key."""
    spec = sweep_from_tree(root)
    read_settings(spec.slurm)
    point = POINT_KINDS.get(spec.runner)
    if point is not None:
        for index in spec.first_points_of_each_value():
            point(path, spec.point_tree(index))
    return Validated("sweep", f"runner {spec.runner}, {len(spec.points)} point(s) over "
                              f"{', '.join(spec.keys)}")


def kind_of(root: Located) -> Callable[[Path, Located], Validated]:
    """The validate function of the kind the top-level sections say the file is."""
    keys = set(root.mapping())
    if "sweep" in keys:
        return validate_sweep
    if keys & RUN_KEYS:
        return validate_run
    if "pool" in keys:
        return validate_pool
    if "slurm" in keys and "cluster" not in keys:
        return validate_calibrate
    if "workflow" in keys:
        return validate_wrappers
    if keys & SIMULATE_KEYS:
        return validate_simulate
    raise root.error("not a djsb config: expected the sections of a run (simulation, analytics), a "
                     "simulate (workload, cluster, policy), a pool, a calibrate (workload, slurm) or a "
                     "sweep config")


def validate(path: Path) -> Validated:
    """Read ``path``, tell its kind and check it (ConfigError with file, line and key if bad)."""
    root = load_yaml(path)
    return kind_of(root)(path, root)
