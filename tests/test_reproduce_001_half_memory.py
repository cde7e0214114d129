"""Fig. 4 of 001 at more than half of the node's memory: the results file of bench/bench_half_memory.py,
the metrics worked by hand from made-up rounds, and the reproduction's fig. 4 rows read from the file
(a modified copy of the committed measurement changes their verdicts)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest

from djsb.cli import main
from djsb.errors import InputError
from djsb.reproduce import paper_001
from djsb.reproduce.checks import Reproduction
from djsb.reproduce.half_memory import COLUMNS, parse_half_memory, read_half_memory
from djsb.reproduce.paper_001 import HALF_MEMORY, fig4_rows

GIB = 2**30
NODE = 24 * GIB
"""A 24 GiB node: 3 GiB + the 100 MiB analytics is 12.9 % of it (fig. 3's "less than 15%"), 13 GiB
54.6 % (fig. 4's "more than 50%")."""
SMALL = {"sim_alone": 1.0, "sim_shrunk": 2.0, "sim_oversub": 1.5, "ana_alone": 1.0, "ana_oversub": 3.0,
         "ana_stopcont": 1.0, "ana_dynamic": 2.0}
"""Fig. 3's round: the analytics loses 2 (oversubscribed) and 1 (beside the shrunk simulation)."""


def results(rows: list[tuple[int, int, dict[str, float]]], node: int = NODE) -> str:
    """A results file of (round, footprint, times) rows, with a provenance line."""
    out = io.StringIO()
    out.write("# made by hand\n")
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    for r, footprint, times in rows:
        writer.writerow({"round": r, "footprint_bytes": footprint, "node_bytes": node, **times,
                         "load_before": 1.0, "load_after": 2.0, "started": "2026-11-27T14:00:00+0000"})
    return out.getvalue()


def doubling(factors: tuple[float, ...]) -> str:
    """Rounds where the 13 GiB analytics' oversubscribed loss is ``factors[r]`` x fig. 3's (2) and
    the simulation's oversubscribed slowdown 1.1 x fig. 3's (1.5)."""
    rows = []
    for r, k in enumerate(factors):
        rows.append((r, 3 * GIB, SMALL))
        rows.append((r, 13 * GIB, {**SMALL, "ana_oversub": 1 + 2 * k, "sim_oversub": 1.5 * 1.1}))
    return results(rows)


def by_item(half_text: str, source: str = "made.csv") -> dict[str, tuple[float, float, float, str]]:
    """The fig. 4 rows of a results file: item -> (measured, low, high, verdict)."""
    rows = fig4_rows(parse_half_memory(half_text, source))
    verdicts = Reproduction("001", "t", "s", rows).verdicts()
    return {r.claim.item: (r.measured.value, r.measured.low, r.measured.high, verdicts[r.claim.item])
            for r in rows}


def test_the_loss_ratio_is_the_rounds_mean_with_its_t_interval() -> None:
    rows = by_item(doubling((1.8, 2.0, 2.2)))
    value, low, high, verdict = rows["analytics loss, oversubscription, 13 GiB (55% of the node) / "
                                     "3 GiB (13% of the node)"]
    # mean 2.0, standard deviation 0.2, t(0.975, 2) = 4.3027: half-width 4.3027 x 0.2 / sqrt(3) = 0.4968
    assert (value, low, high) == pytest.approx((2.0, 1.5032, 2.4968), abs=1e-4)
    assert verdict == "inconclusive"  # "almost a double" within a factor 1.25 is [1.6, 2.5]
    value, low, high, verdict = rows["simulation slowdown, oversubscription, 13 GiB (55% of the node) / "
                                     "3 GiB (13% of the node)"]
    assert (value, low, high, verdict) == (pytest.approx(1.1), pytest.approx(1.1), pytest.approx(1.1),
                                           "reproduced")  # "at most 20% more impacted": [1, 1.2]
    # the same loss at both fractions: not the paper's doubling
    same = by_item(doubling((1.0, 1.0, 1.0)))
    assert same["analytics loss, oversubscription, 13 GiB (55% of the node) / 3 GiB (13% of the node)"][3] \
        == "not reproduced"


def test_dynamicity_on_table_2s_timeline_worked_by_hand() -> None:
    half = parse_half_memory(doubling((1.0, 1.0)), "made.csv")
    sample = half.at(3 * GIB)[0]
    # oversubscription, n_a 6: each analytics runs 10 s x 3 = 30 s, the simulation at 1 / 1.5 of its
    # speed meanwhile: 300 + 6 x 30 x (1 - 1/1.5) = 360 s, slowdown 1.2; eqs. (3)-(4) with 2 and 1
    # CPUs: w_s = 2 x 360 - 0.5 x 6 x 30 = 630, w_a = 0.5 x 30 = 15
    assert sample.dynamicity("oversubscription", 6) == pytest.approx(
        math.exp(-(630 * math.log(1.2) + 15 * math.log(3)) / 645))
    # n_a 1: 310 s, w_s 620 - 15 = 605: a higher dynamicity, so n_a 6 is the lowest
    assert sample.dynamicity("oversubscription", 1) == pytest.approx(
        math.exp(-(605 * math.log(310 / 300) + 15 * math.log(3)) / 620))
    assert sample.lowest_dynamicity("oversubscription") == sample.dynamicity("oversubscription", 6)
    # stop&continue, n_a 6: the simulation stopped 6 x 10 s: 360 s; eqs. (5)-(6): w_s = 2 (360 - 60),
    # w_a = 10; the analytics' slowdown 1 adds nothing
    assert sample.dynamicity("stopcont", 6) == pytest.approx(math.exp(-(600 * math.log(1.2)) / 610))
    # dynamic, n_a 6: the analytics 20 s, the shrunk simulation at 1/2: 300 + 6 x 20 x 0.5 = 360 s;
    # eqs. (7)-(8): w_s = 720 - 120 = 600, w_a = 20
    assert sample.dynamicity("dynamic", 6) == pytest.approx(
        math.exp(-(600 * math.log(1.2) + 20 * math.log(2)) / 620))


def test_the_committed_measurement_gives_fig_4s_rows() -> None:
    half = read_half_memory(HALF_MEMORY)
    assert half.small < min(half.large)
    assert all(s.fraction > 0.5 for large in half.large for s in half.at(large).values())
    assert len(half.at(half.small)) >= 3  # at least 3 samples
    assert "load average" in half.provenance and "command:" in half.provenance
    rows = fig4_rows(half)
    assert {r.claim.source.split(" of 001")[0] for r in rows} == {"Fig. 4 (a)", "Fig. 4 (b)", "Fig. 4 (c)"}
    assert all(r.measured.low <= r.measured.value <= r.measured.high for r in rows)


def test_a_modified_copy_of_the_measurement_changes_the_verdicts(tmp_path: Path) -> None:
    """Fig. 4's large footprints given exactly the small one's times with the analytics' loss doubled:
    the loss ratio is 2 in every round (reproduced), the simulation's ratio 1 (reproduced, at the
    rule's edge); with the loss unchanged the ratio is 1 (not reproduced)."""
    text = HALF_MEMORY.read_text()
    half = parse_half_memory(text, str(HALF_MEMORY))

    def copy(loss_factor: float) -> str:
        lines = []
        for line in text.splitlines():
            if line.startswith("#") or line.startswith("round,"):
                lines.append(line)
                continue
            row = dict(zip(COLUMNS, line.split(","), strict=True))
            if int(row["footprint_bytes"]) in half.large:
                small = half.at(half.small)[int(row["round"])].times
                times = {**small, "ana_oversub": small["ana_alone"]
                         + loss_factor * (small["ana_oversub"] - small["ana_alone"])}
                row.update({k: repr(v) for k, v in times.items()})
            lines.append(",".join(row[c] for c in COLUMNS))
        return "\n".join(lines) + "\n"

    for factor, verdict in ((2.0, "reproduced"), (1.0, "not reproduced")):
        rows = by_item(copy(factor))
        losses = {item: v for item, v in rows.items() if item.startswith("analytics loss, oversubscription")}
        assert len(losses) == len(half.large)
        for value, low, high, got in losses.values():
            assert (value, low, high) == pytest.approx((factor, factor, factor))
            assert got == verdict
        sims = [v for item, v in rows.items() if item.startswith("simulation slowdown")]
        assert all(v[0] == pytest.approx(1.0) and v[3] == "reproduced" for v in sims)


@pytest.mark.parametrize(("text", "where"), [
    (doubling((2.0, 2.0)).replace(",1.5,1.0,3.0", ",x,1.0,3.0", 1), "made.csv:3: "),
    (results([(0, 3 * GIB, SMALL), (1, 3 * GIB, SMALL)]), "made.csv: footprint_bytes: "),
    (doubling((2.0, 2.0)).replace("round,", "rnd,"), "made.csv:2: "),
    (doubling((2.0,)), "made.csv: round: "),
    (doubling((2.0, 2.0)) + f"1,{13 * GIB},{NODE}" + ",1" * 9 + ",x\n", "made.csv: round: "),
])
def test_a_bad_results_file_is_refused_naming_the_place(text: str, where: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_half_memory(text, "made.csv")
    assert caught.value.one_line().startswith(where)


def test_reproduce_001_refuses_a_bad_results_file_before_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "half.csv"
    bad.write_text(results([(0, 3 * GIB, SMALL), (1, 3 * GIB, SMALL)]))
    monkeypatch.setattr(paper_001, "HALF_MEMORY", bad)
    out = tmp_path / "out"
    assert main(["reproduce", "001", "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"djsb: error: {bad}: footprint_bytes: needs one footprint_bytes under 15% of node_bytes and at least "
        "one over 50%"]
    assert not out.exists()
