"""The thesis' experiments as sweep configs: each base config loads as a simulate
config, every swept key exists in it, and the grids have the thesis' sizes."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
import yaml
from support import TraceFile

from djsb.simulate import load_experiment

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def base_and_sweep(trace: TraceFile, tmp_path: Path, name: str) -> tuple[Path, dict]:
    """The config without its sweep section (its trace, by file name, taken from the real traces), and
    the section."""
    data = yaml.safe_load((CONFIGS / name).read_text())
    sweep = data.pop("sweep")
    if "swf" in data["workload"]:
        data["workload"]["swf"] = str(trace(Path(data["workload"]["swf"]).name))
    base = tmp_path / name
    base.write_text(yaml.safe_dump(data))
    return base, sweep


def has_path(data: dict, dotted: str) -> bool:
    node: object = data
    for part in dotted.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False
    return True


@pytest.mark.parametrize(("name", "points"), [
    # 10 seeds x 4 run times x 5 CPU counts x 10 fair shares = 2,000 (004 sec. 3.3.1)
    ("wrappers-static-sweep.yaml", 10 * 4 * 5 * 10),
    # 4 (workflow, strategy) pairs zipped x 6 instants x 2 fair shares = 48 (004 sec. 3.3.2)
    ("wrappers-dynamic-sweep.yaml", 4 * 6 * 2),
])
def test_sweep_config_is_a_simulate_config_with_a_grid(trace: TraceFile, tmp_path: Path, name: str,
                                                       points: int) -> None:
    base, sweep = base_and_sweep(trace, tmp_path, name)
    experiment = load_experiment(base)
    data = yaml.safe_load(base.read_text())
    assert experiment.workflow is not None
    keys = [*sweep.get("grid", {}), *sweep.get("zip", {})]
    assert all(has_path(data, key) for key in keys), keys
    zipped = {len(v) for v in sweep.get("zip", {}).values()}
    assert len(zipped) <= 1
    assert math.prod(len(v) for v in sweep["grid"].values()) * (zipped.pop() if zipped else 1) == points


def test_dynamic_week_is_found_in_llnl_atlas(trace: TraceFile, tmp_path: Path) -> None:
    # The week with the most submitted work starts on a Sunday at local midnight; the replay holds
    # the 2-day warm-up and the week, shifted so the week starts at 172800 s.
    base, _ = base_and_sweep(trace, tmp_path, "wrappers-dynamic-sweep.yaml")
    experiment = load_experiment(base)
    window = experiment.window
    assert window is not None and window.local_start is not None
    start = dt.datetime.fromisoformat(window.local_start)
    assert (start.weekday(), start.hour, start.minute, start.utcoffset()) == (6, 0, 0, dt.timedelta(hours=-8))
    assert (window.length, window.warmup) == (604800.0, 172800.0)
    assert 0 <= min(j.submit for j in experiment.jobs) and max(j.submit for j in experiment.jobs) < 172800 + 604800
