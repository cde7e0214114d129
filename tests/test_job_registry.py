"""The job-module registry, the option readers and the batch-template guard (djsb/jobs/)."""

from __future__ import annotations

import ast
import shlex
from pathlib import Path

import jinja2
import pytest
from support import sim_request

from djsb.errors import ConfigError
from djsb.jobs import CommandJobModule, JobModule
from djsb.jobs.batch import render_batch_script, script_path
from djsb.jobs.loader import is_path, module_class, registered, runs_remotely
from djsb.transport import LocalTransport
from djsb.yamlnodes import load_yaml

ROOT = Path(__file__).resolve().parent.parent


def test_the_built_in_modules_register_by_name() -> None:
    modules = registered()
    assert list(modules) == ["local", "lsf", "sge", "simulated", "slurm"]
    assert all(issubclass(cls, JobModule) and cls.name == name for name, cls in modules.items())
    # only the command-based modules can run their commands on a login node over SSH
    assert [name for name, cls in modules.items() if runs_remotely(cls)] == ["lsf", "sge", "slurm"]


def test_unknown_names_and_paths() -> None:
    with pytest.raises(ConfigError, match=r"unknown job module 'pbs' \(built in: local, lsf, sge, simulated, slurm"):
        module_class("pbs")
    with pytest.raises(ConfigError, match="no module file at"):
        module_class("nope/mine.py")
    assert is_path("mine.py") and is_path("dir/mine") and not is_path("slurm")
    template = module_class(str(ROOT / "job_modules" / "template.py"))
    assert issubclass(template, CommandJobModule) and template.name == "example"
    # the example a user copies: its option, and every request field quoted into one PBS command line
    example = template({"queue": "batch"}, LocalTransport())
    assert shlex.split(example.get_submit_command(sim_request())) == [
        "qsub", "-N", "exec-s0-sim0", "-o", "/runs/a b/sim.out", "-e", "/runs/a b/sim.err", "-q", "batch",
        "-l", "select=2:ncpus=2", "--", "/apps/djsb-stream", "--control", "/runs/a b/ctl"]
    with pytest.raises(ConfigError, match="job_module.options.queue: expected a name"):
        template({"queue": "two words"}, LocalTransport())


def test_djsb_imports_job_modules_only_through_the_registry() -> None:
    """Design notes: dependencies point one way; the registry is the one door to job_modules/."""
    importers = []
    for path in (ROOT / "djsb").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "job_modules" for name in names):
                importers.append(path.relative_to(ROOT).as_posix())
    assert importers == []


def test_options_from_a_file_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "options.yaml"
    path.write_text("queue: all.q\nretry_for: -1\n")
    with pytest.raises(ConfigError) as info:
        module_class("sge").read_options(load_yaml(path))
    # as_number's message for a value below its minimum 0, on line 2 of the file
    assert info.value.one_line() == f"{path}:2: retry_for: must be a time >= 0 s, got -1 (-1 s)"


def test_options_from_code_fill_defaults_and_name_the_key() -> None:
    values = module_class("sge").read_options({"queue": "all.q"})
    # the documented defaults: time_factor 3, time_margin 120 s, pe smp
    assert (values["queue"], values["time_factor"], values["time_margin"], values["pe"]) == ("all.q", 3.0, 120.0,
                                                                                           "smp")
    with pytest.raises(ConfigError) as info:
        module_class("slurm").read_options({"srun_options": [True]})
    assert info.value.one_line() == "job_module.options.srun_options: expected a list of arguments, got a list"


def test_a_template_cannot_print_an_unquoted_value(tmp_path: Path) -> None:
    (tmp_path / "bad.sh.j2").write_text("echo {{ word }}\n")
    with pytest.raises(jinja2.TemplateError, match="without the shquote/shjoin filter"):
        render_batch_script(tmp_path / "bad.sh.j2", word="$(reboot)")
    (tmp_path / "good.sh.j2").write_text("echo {{ word | shquote }} {{ words | shjoin }}\n")
    assert render_batch_script(tmp_path / "good.sh.j2", word="$(reboot)", words=["a b", "c"]) == (
        "echo '$(reboot)' 'a b' c\n")


def test_script_path_is_beside_the_output() -> None:
    assert script_path("/runs/r1/jobs/exec-s0-sim0.out") == "/runs/r1/jobs/exec-s0-sim0.sh"
    assert script_path("/runs/plain") == "/runs/plain.sh"
