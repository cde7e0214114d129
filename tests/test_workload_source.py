"""One reader of where a config's jobs come from (djsb/workloads/source.py), used by ``djsb
simulate``, ``djsb calibrate`` and the simulated job module's ``background``: each mistake is
blamed at the line of its own key, with the same words whichever config makes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from djsb.calibrate.spec import load_calibration
from djsb.errors import ConfigError
from djsb.simulate.experiment import load_experiment
from djsb.yamlnodes import load_yaml
from job_modules.simulated import parse_options

FIXTURES = Path(__file__).parent / "fixtures" / "calibrate"
CALIBRATE = "seed: 1\nworkload:\n  count: 4\n  {source}\nslurm: {{partition: oversub}}\n"
"""A calibration file whose workload source is on line 4."""
SIMULATE = "seed: 1\ncluster: {{nodes: [{{count: 2, cores: 4}}]}}\nworkload:\n  {source}\n"
"""A simulate config whose workload source is on line 4."""
RUN_OPTIONS = "job_module:\n  name: simulated\n  options:\n    background:\n      warmup: 0\n      {source}\n"
"""The simulated module's options with the background's source on line 6."""


def error_of(tmp_path: Path, template: str, source: str) -> ConfigError:
    path = tmp_path / "config.yaml"
    path.write_text(template.format(source=source))
    with pytest.raises(ConfigError) as info:
        if template is CALIBRATE:
            load_calibration(path)
        elif template is SIMULATE:
            load_experiment(path)
        else:
            options = load_yaml(path).get("job_module")
            assert options is not None and options.get("options") is not None
            parse_options(options.mapping()["options"]).background_jobs(first_id=1)
    assert info.value.source == str(path)
    return info.value


@pytest.mark.parametrize(("template", "section"), [(CALIBRATE, "workload"), (SIMULATE, "workload")],
                         ids=["calibrate", "simulate"])
def test_an_unknown_generator_is_blamed_at_its_key_in_both_configs(tmp_path: Path, template: str,
                                                                   section: str) -> None:
    error = error_of(tmp_path, template, "generator: poisson_exponentail")
    assert (error.line, error.key) == (4, f"{section}.generator")
    assert error.message == "unknown generator (choose from poisson_exponential, static_lognormal_004, empty)"


@pytest.mark.parametrize(("template", "key", "line"), [
    (CALIBRATE, "workload.swf", 4), (SIMULATE, "workload.swf", 4),
    (RUN_OPTIONS, "job_module.options.background.trace", 6),
], ids=["calibrate", "simulate", "simulated-background"])
def test_a_missing_trace_is_blamed_at_its_key_in_every_config(tmp_path: Path, template: str, key: str,
                                                               line: int) -> None:
    name = "swf" if template is not RUN_OPTIONS else "trace"
    error = error_of(tmp_path, template, f"{name}: {tmp_path / 'nowhere.swf'}")
    assert (error.line, error.key) == (line, key)
    assert error.message == f"file not found: {tmp_path / 'nowhere.swf'}"


def test_a_generator_parameter_is_blamed_at_its_own_line(tmp_path: Path) -> None:
    source = "generator: poisson_exponential\n  params:\n    n_jobs: 4\n    arrival_rate: 1\n    service_rat: 1"
    error = error_of(tmp_path, CALIBRATE, source)
    assert (error.line, error.key) == (8, "workload.params.service_rat")


def test_the_background_trace_is_read_relative_to_the_working_directory(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # small.swf's 4 records run 20, 10, 10 and 5 s (field 4); all are taken (no start, no count)
    (tmp_path / "small.swf").write_text((FIXTURES / "small.swf").read_text())
    monkeypatch.chdir(tmp_path)
    jobs = parse_options({"background": {"trace": "small.swf"}}).background_jobs(first_id=100)
    assert [(job.job_id, job.run_time) for job in jobs] == [(100, 20.0), (101, 10.0), (102, 10.0), (103, 5.0)]
