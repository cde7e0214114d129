"""Issue 14 item 3: ``djsb calibrate`` on the live mini-cluster. The 32-job KTH-SP2 window of
tests/fixtures/calibrate/ runs on Slurm once and on the model built from Slurm's own
``scontrol show`` answers; the model must come within 10 % of Slurm's mean wait and order the
starts with Kendall tau >= 0.8, on a run with real queueing (>= 10 jobs backfilled by Slurm)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from slurm_plugin import SlurmCluster

from djsb.calibrate.run import run_calibration

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CONFIG = Path(__file__).parent / "fixtures" / "calibrate" / "calibrate.yaml"


def test_model_matches_the_mini_cluster(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    print(run_calibration(CONFIG, tmp_path, runs=1))
    figures = json.loads((tmp_path / "comparison.json").read_text())["model vs slurm_1"]
    assert figures["jobs"] >= 30
    assert len(figures["backfilled_a"]) >= 10  # Slurm's own run queued and backfilled
    assert abs(figures["mean_wait_error"]) <= 0.10, figures
    assert figures["tau"] >= 0.8, figures
    assert (tmp_path / "timeline.png").stat().st_size > 0
