"""djsb reproduce 004: the win / tie / loss rule and the thesis' own counts (Tables 4.2-4.3 of 004),
fair share on a contended week (a low factor waits longer than a high one), the dynamic sweep's
verdicts, and the whole reproduction (its static sweep at one seed: ``djsb reproduce 004`` runs three,
``make readme-numbers`` runs that)."""

from __future__ import annotations

import csv
import gzip
import statistics
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from djsb.reproduce.checks import COLUMNS
from djsb.reproduce.paper_004 import (
    DYNAMIC,
    contended_rows,
    dynamic_rows,
    fair_share_row,
    ours_table,
    outcome,
    run,
    wrapping_rows,
)
from djsb.reproduce.papers import CONFIGS
from djsb.reproduce.writer import write_outputs
from djsb.workloads.swf import read_swf
from djsb.workloads.window import week_starts
from djsb.yamlnodes import load_yaml


def test_a_difference_of_the_models_pass_delay_per_job_is_a_tie() -> None:
    assert outcome(8, 1, 7) == 0  # the vertical workflow's 7 x 1 s on an idle machine
    assert outcome(134, 4, 7) == 1 and outcome(1047, 1294, 7) == -1  # Table 4.2 of 004, A.2 / A.1
    assert outcome(50, 50, 12) == 0 and outcome(3, 857, 12) == -1  # Table 4.3, B.1 / A.3 worst


def test_thesis_shares_counted_by_hand() -> None:
    # Table 4.2 of 004: wrapping shortens T_q at A.2, B.2 (1.0) and A.2, A.3, B.2, B.3 (6.9e-3): 6 of
    # 12; lengthens at A.1, B.1 (6.9e-3): 2. Table 4.3: shortens at A.2, B.2 (1.0), A.1, A.2, B.2
    # (6.9e-3): 5; lengthens at A.3, B.3 (6.9e-3): 2.
    rows, setup = wrapping_rows(DYNAMIC)
    paper = {row.claim.item.split("where ")[1].split(" the")[0]: row.claim.paper_value for row in rows}
    assert paper == {"vertical wrapping shortens": 6 / 12, "horizontal wrapping shortens": 5 / 12,
                     "horizontal wrapping lengthens": 2 / 12}
    # the model's vertical wrapper cannot lengthen T_q: a setup row, not a claim
    assert [(row.item.split("where ")[1].split(" the")[0], row.paper_value) for row in setup] == [
        ("vertical wrapping lengthens", f"{2 / 12:.3g}")]
    # and the thesis agrees with itself under every rule
    assert all(row.own_verdict() == "reproduced" for row in rows)


def test_thesis_fair_share_ratio() -> None:
    # Table 4.2, unwrapped: worst (1047 + 249 + 183 + 291 + 1323 + 5710) / 6 over best (134 + 221) / 6
    row = fair_share_row("the thesis", DYNAMIC)
    assert row.claim.paper_value == pytest.approx(8803 / 355)
    assert row.measured.value == pytest.approx(8803 / 355) and row.own_verdict() == "reproduced"


@pytest.fixture(scope="module")
def reproduction(tmp_path_factory: pytest.TempPathFactory, trace: Callable[[str], Path]) -> Path:
    """The directory of one reproduction, its static sweep at seed 1 (skipped without the traces)."""
    trace("KTH-SP2-1996-2.1-cln.swf.gz")
    trace("LLNL-Atlas-2006-2.1-cln.swf.gz")
    out = tmp_path_factory.mktemp("reproduce-004")
    write_outputs(run(out, [1]), out)
    return out


@pytest.mark.slow
def test_low_fair_share_waits_longer_on_a_contended_week(reproduction: Path) -> None:
    config = CONFIGS / "wrappers-contended-fairshare.yaml"
    sweep = pd.read_csv(reproduction / "contended" / "sweep.csv")
    waits = sweep.pivot(index="workflow.submit", columns="workflow.fairshare_target",
                        values="workflow_queue_time_s")
    # at every one of the six instants the worst factor (0.01) waits longer than the best (1.0)
    assert (waits[0.01] > waits[1.0]).all()
    assert statistics.fmean(waits[0.01]) > 2 * statistics.fmean(waits[1.0])
    ratio, share = contended_rows(sweep, config)
    assert ratio.own_verdict() == "reproduced" and share.own_verdict() == "reproduced"
    assert share.measured.value == 1.0
    # the week is contended in the model too: other users' jobs are queued at the instants
    queued = [int(n) for n in ratio.note.split("(")[1].split(")")[0].split(", ")]
    assert len(queued) == 6 and min(queued) > 0


@pytest.mark.slow
def test_atlas_week_verdicts(reproduction: Path) -> None:
    config = CONFIGS / "wrappers-dynamic-sweep.yaml"
    sweep = pd.read_csv(reproduction / "dynamic" / "sweep.csv")
    rows, _, quiet = dynamic_rows(sweep, config)
    worst = next(row for row in rows if "lengthens T_q, worst" in row.claim.item)
    # horizontal wrapping loses at A.3 and B.3 under the worst fair share, as in Table 4.3
    assert worst.own_verdict() == "reproduced" and "here: A.3, B.3" in worst.note
    assert "room for a 96-CPU job" in worst.note
    # fair share changes nothing on this week, whose queue is empty: not reproduced here
    atlas = fair_share_row("LLNL-Atlas' busiest week", ours_table(sweep), note=quiet)
    assert atlas.own_verdict() == "not reproduced" and atlas.measured.value == pytest.approx(1.0)
    assert "background jobs are queued" in atlas.note


@pytest.mark.slow
def test_reproduce_004_end_to_end(reproduction: Path) -> None:
    with (reproduction / "reproduce.csv").open() as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        rows = list(reader)
    verdict = {row["item"]: row["verdict"] for row in rows}
    fit_a = next(row for row in rows if row["item"] == "eq. 4.1 a")
    assert float(fit_a["paper_value"]) == 7.469 and fit_a["verdict"] == "reproduced"
    # the Atlas week's empty queue is removed by KTH-SP2's contended week: its counterfactual
    atlas = next(row for row in rows if row["item"].endswith("LLNL-Atlas' busiest week"))
    assert atlas["counterfactual"] in verdict
    assert atlas["verdict"] == ("explained" if verdict[atlas["counterfactual"]] == "reproduced"
                                else "not reproduced")
    assert (reproduction / "static" / "report" / "wait_vs_fairshare.png").is_file()


def test_contended_week_is_kths_most_queued(trace: Callable[[str], Path]) -> None:
    # The config's week is the one whose jobs' recorded waits (SWF field 3) hold the most queued work,
    # sum of CPUs (field 5) x wait over its jobs, among KTH-SP2's Sunday-to-Sunday weeks: computed here
    # from the raw records, beside the config's comment (on average 11 machines' worth of CPUs queued).
    path = trace("KTH-SP2-1996-2.1-cln.swf.gz")
    records = [line.split() for line in gzip.open(path, "rt") if line.strip() and not line.startswith(";")]
    window = load_yaml(CONFIGS / "wrappers-contended-fairshare.yaml").plain()["workload"]["window"]
    week = 604800.0
    starts = week_starts(read_swf(path))

    def queued(start: float) -> float:
        return sum(float(r[4]) * float(r[2]) for r in records
                   if start <= float(r[1]) < start + week and float(r[2]) >= 0 and float(r[4]) > 0)

    assert max(starts, key=queued) == window["start"]
    assert queued(window["start"]) / (100 * week) == pytest.approx(11.07, abs=0.01)
