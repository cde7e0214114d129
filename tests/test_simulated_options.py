"""The simulated job module's options, one declaration each (job_modules/simulated.py's
ClusterOptions): the reference page is generated from them, the job-module API's schema is derived
from them, a bad value is one line naming its key, and the renamed ``start_latency`` is refused with
its new name."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.cli import main
from djsb.setting import declared
from job_modules.simulated import OPTIONS, ClusterOptions, SimulatedJobModule, reference

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "configs" / "simulated-quick.yaml"


def test_the_reference_page_is_the_declarations() -> None:
    page = (ROOT / "docs" / "reference" / "simulated.md").read_text()
    assert page == reference(), "docs/reference/simulated.md is stale: run make reference"


def test_every_declared_option_is_in_the_reference_and_the_schema() -> None:
    page = reference()
    names = declared(ClusterOptions)
    assert len(names) == 19
    for name in names:
        assert f"| `{name}` |" in page
    assert list(OPTIONS) == list(names)
    assert "| `eligibility_delay` | 0.0 | s | sbatch --begin |" in page
    assert "| `policy` | fifo | name |" in page
    # the defaults read from no options are the declared ones
    assert SimulatedJobModule.read_options({}).values == {
        name: getattr(ClusterOptions(), name) for name in names}


def config_with(tmp_path: Path, line: str) -> tuple[Path, int]:
    """configs/simulated-quick.yaml with ``line`` added to its job_module.options, and that line's number."""
    lines = QUICK.read_text().splitlines()
    at = lines.index("  options:") + 1
    lines.insert(at, f"    {line}")
    path = tmp_path / "sim.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, at + 1


BAD_VALUES = {
    "eligibility_delay: soon": "eligibility_delay: expected a number of seconds",
    "timeslice_efficiency: 1.5": "timeslice_efficiency: must be <= 1 (a share of progress), got 1.5",
    "policy: lifo": "policy: expected one of fifo, easy, conservative, marenostrum4, got 'lifo'",
    "oversubscribe: sometimes": "oversubscribe: invalid OverSubscribe value 'SOMETIMES'",
    "llc_per_node: lots": "llc_per_node: expected a size",
    "scheduler: {bf_windw: 10}": "scheduler.bf_windw: unknown key: did you mean 'bf_window'?",
}
"""An option line added to a config, and how its one-line refusal goes on after ``job_module.options.``."""


@pytest.mark.parametrize("line", BAD_VALUES)
def test_a_bad_value_is_one_line_naming_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str) -> None:
    path, number = config_with(tmp_path, line)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert f"{path}:{number}: job_module.options.{BAD_VALUES[line]}" in err


def test_the_old_start_latency_is_refused_with_its_new_name(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, number = config_with(tmp_path, "start_latency: 2")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err, err
    assert f"{path}:{number}: job_module.options.start_latency: renamed: write 'eligibility_delay'" in err
