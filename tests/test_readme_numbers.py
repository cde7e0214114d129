"""README.md's measured numbers are generated (bench/readme_numbers.py): every block is one the
script renders, every slow block's command is named in the README, the quick ones are what their
commands give now, and the check and rewrite work on a README of our own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import readme_numbers as rn

REPO = Path(__file__).resolve().parent.parent


def test_every_block_in_the_readme_is_generated_and_every_generated_block_is_there() -> None:
    assert set(rn.readme_blocks((REPO / "README.md").read_text())) == set(rn.BLOCKS)


def test_the_readme_names_the_command_of_every_slow_block() -> None:
    text = re.sub(r"\s+", " ", (REPO / "README.md").read_text())
    slow = {b.source for b in rn.BLOCKS.values() if not rn.SOURCES[b.source].quick}
    assert slow, "no slow source"
    missing = [rn.SOURCES[name].command for name in slow if rn.SOURCES[name].command not in text]
    assert not missing, missing


def test_the_quick_numbers_are_what_their_commands_give_now(tmp_path: Path) -> None:
    quick = rn.selected([], quick_only=True)
    absent = sorted({t for n in quick for t in rn.missing_traces(rn.SOURCES[rn.BLOCKS[n].source])})
    if absent:
        pytest.skip(f"real traces not found in {rn.TRACES}: {', '.join(absent)}")
    current = rn.readme_blocks((REPO / "README.md").read_text())
    assert rn.render(quick, tmp_path, reuse=False) == {name: current[name] for name in quick}


def test_check_finds_a_stale_number_and_the_rewrite_fixes_only_its_block(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # a quick source computing 355 / 113 by hand: 3.14159..., rendered to 2 places
    source = rn.Source("pi", True, "355 / 113", compute=lambda: {"pi": 355 / 113})
    block = rn.Block("pi", "pi", lambda _: f"{source.compute()['pi']:.2f}" if source.compute else "")
    monkeypatch.setattr(rn, "SOURCES", {"pi": source})
    monkeypatch.setattr(rn, "BLOCKS", {"pi": block})
    readme = tmp_path / "README.md"
    stale = "pi is <!-- numbers: pi -->3.2<!-- /numbers --> (355 / 113),\nand 3.2 elsewhere is prose.\n"
    readme.write_text(stale)
    monkeypatch.setattr(rn, "README", readme)
    assert rn.main(["--check", "--runs", str(tmp_path / "runs")]) == 1
    assert "pi: README '3.2' -> measured '3.14'" in capsys.readouterr().out
    assert readme.read_text() == stale
    assert rn.main(["--runs", str(tmp_path / "runs")]) == 0
    assert readme.read_text() == stale.replace("-->3.2<", "-->3.14<")
    assert rn.main(["--check", "--runs", str(tmp_path / "runs")]) == 0


def test_a_block_twice_or_missing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    twice = "<!-- numbers: a -->1<!-- /numbers --> <!-- numbers: a -->1<!-- /numbers -->"
    with pytest.raises(ValueError, match="block a appears twice"):
        rn.readme_blocks(twice)
    monkeypatch.setattr(rn, "SOURCES", {"one": rn.Source("one", True, "1", compute=lambda: {})})
    monkeypatch.setattr(rn, "BLOCKS", {"one": rn.Block("one", "one", lambda _: "1")})
    readme = tmp_path / "README.md"
    readme.write_text("no blocks here\n")
    monkeypatch.setattr(rn, "README", readme)
    assert rn.main(["--check", "--runs", str(tmp_path)]) == 2
    assert readme.read_text() == "no blocks here\n"


def test_a_reproduce_number_is_read_from_exactly_one_item(tmp_path: Path) -> None:
    (tmp_path / "reproduce.csv").write_text(
        "paper,item,source,paper_value,measured,low,high,rule,verdict,counterfactual,note\n"
        "003,95th percentile wait after / before,Sec. 4.4,0.333,0.21,0.21,0.21,below 1,reproduced,,\n"
        "003,wait where the ECDFs cross,Sec. 4.4,2920,17170,17100,17250,within 2x,not reproduced,,\n"
        "002,energy of N2(3) C3 / X0 C1,Sec. VI,0.5,0.4368,0.3967,0.4769,within 25%,reproduced,,\n")
    assert rn.measured("ECDFs cross", rn.grouped)(tmp_path) == "17,170"
    assert rn.interval_of("energy of N2(3)")(tmp_path) == "0.40-0.48"
    assert rn.tally(tmp_path) == "2 reproduced, 1 not reproduced, 0 inconclusive, 0 explained"
    with pytest.raises(ValueError, match="2 items contain 'wait'"):
        rn.measured("wait", rn.grouped)(tmp_path)
    with pytest.raises(ValueError, match="0 items contain 'no such'"):
        rn.interval_of("no such")(tmp_path)
