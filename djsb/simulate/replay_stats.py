"""``djsb replay-stats CONFIG``: ``djsb simulate`` of an SWF replay, then the replay compared with
its trace (:mod:`djsb.report.replay_stats`)."""

from __future__ import annotations

from pathlib import Path

from djsb.report.replay_stats import write_replay_stats
from djsb.simulate.experiment import load_experiment
from djsb.simulate.results import write_replay
from djsb.yamlnodes import as_str, load_yaml


def replay_and_compare(config_path: Path, out_dir: Path) -> Path:
    """Replay the config's trace into ``out_dir`` as ``djsb simulate`` does, then compare it with
    the trace."""
    root = load_yaml(config_path)
    experiment = load_experiment(config_path, root)
    workload = root.get("workload")
    assert workload is not None  # load_experiment requires it
    swf = workload.get("swf")
    if swf is None:
        raise workload.error("replay-stats compares a replay with its trace: give workload.swf")
    trace = Path(as_str(swf))
    write_replay(experiment, out_dir, config_path)
    write_replay_stats(trace if trace.is_absolute() else config_path.resolve().parent / trace,
                       experiment.as_recorded(), out_dir)
    return out_dir
