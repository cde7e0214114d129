"""``djsb wrappers CONFIG``: a simulate config's workflow run under each of its wrapper
strategies, ranked by :func:`djsb.workflows.compare.ranked`."""

from __future__ import annotations

import copy
from pathlib import Path

from djsb.errors import ConfigError
from djsb.simulate.experiment import load_experiment
from djsb.workflows.compare import ranked
from djsb.workflows.run import WorkflowOutcome, run_workflow


def compare_strategies(config_path: Path) -> list[WorkflowOutcome]:
    """Run the config's workflow under each of its strategies; best first."""
    experiment = load_experiment(config_path)
    plan = experiment.workflow
    if plan is None:
        raise ConfigError("missing section 'workflow' (the workflow to evaluate)", source=str(config_path),
                          line=1, key="workflow")
    outcomes = [run_workflow(experiment.jobs, experiment.cluster, experiment.scheduler,
                             copy.deepcopy(experiment.priority), experiment.seed, plan, strategy)[1]
                for strategy in plan.strategies]
    return ranked(outcomes)
