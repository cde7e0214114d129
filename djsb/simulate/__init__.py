"""The commands that read a simulate config: ``djsb simulate`` (:mod:`~djsb.simulate.command`),
``djsb replay-stats`` (:mod:`~djsb.simulate.replay_stats`) and ``djsb wrappers``
(:mod:`~djsb.simulate.wrappers`), over the libraries below them: the config's reader
(:mod:`~djsb.simulate.experiment`, its format documented there) and the replay's writer
(:mod:`~djsb.simulate.results`).

The names users import from ``djsb.simulate`` are re-exported here.
"""

from djsb.report.replay_figures import step_bins
from djsb.simulate.command import run_simulate
from djsb.simulate.experiment import Experiment, load_experiment
from djsb.simulate.replay_stats import replay_and_compare
from djsb.simulate.results import METRIC_UNITS
from djsb.simulate.wrappers import compare_strategies

__all__ = ["METRIC_UNITS", "Experiment", "compare_strategies", "load_experiment", "replay_and_compare",
           "run_simulate", "step_bins"]
