"""Scheduler-bound values (names, node lists, extra arguments) checked at ``djsb validate`` time.

Each hostile value is rejected by the real ``djsb validate`` in a subprocess with one line
``file:line: key: message`` and exit status 2; the values would ``touch`` a sentinel file if any
shell ever ran them, and the sentinel must not exist afterwards.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from djsb.errors import ConfigError
from djsb.jobs.hostlist import MAX_HOSTS, check_hostname, expand_hostlist, split_host_list
from djsb.jobs.names import lsf_project_name, lsf_queue_name, sge_object_name, slurm_name, slurm_partitions
from djsb.jobs.options import check_arguments, located
from job_modules.slurm.module import SlurmJobModule

APPS = """\
simulation:
  total_tasks: 1
  cpus_per_task: 2
  total_memory: 64MiB
  exec_time: 10
{sim_extra}analytics:
  total_tasks: 1
  cpus_per_task: 1
  total_memory: 16MiB
  exec_time: 2
"""


def config_text(module: str, options: dict[str, object] | None = None, hosts: object = None) -> str:
    """A config for ``module`` with ``options`` and the simulation's node_host_names, every value
    written as JSON (valid YAML) so newlines and NULs reach the reader as they are."""
    head = f"job_module:\n  name: {module}\n"
    if options:
        head += "  options:\n" + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in options.items())
    extra = f"  node_host_names: {json.dumps(hosts)}\n" if hosts is not None else ""
    return head + APPS.format(sim_extra=extra)


def hostile_cases(sentinel: Path) -> list[tuple[str, str, str]]:
    """(module, config text, key the error must name): twenty values a shell would run. ${IFS} is a
    space to a shell, so most hold no white space and only the scheduler's own rules reject them."""
    touch = f"touch${{IFS}}{sentinel}"
    return [
        ("slurm", config_text("slurm", {"partition": f"debug;{touch}"}), "job_module.options.partition"),
        ("slurm", config_text("slurm", {"partition": f"debug$({touch})"}), "job_module.options.partition"),
        ("slurm", config_text("slurm", {"account": f"acct`{touch}`"}), "job_module.options.account"),
        ("slurm", config_text("slurm", {"qos": f"normal\n{touch}"}), "job_module.options.qos"),
        ("slurm", config_text("slurm", {"partition": f"debug|{touch}"}), "job_module.options.partition"),
        ("slurm", config_text("slurm", {"account": f"a&&{touch}"}), "job_module.options.account"),
        ("slurm", config_text("slurm", {"qos": "normal'\";" + touch}), "job_module.options.qos"),
        ("slurm", config_text("slurm", {"partition": "deb\0ug"}), "job_module.options.partition"),
        ("slurm", config_text("slurm", {"sbatch_options": [f"--comment=x\n{touch}"]}),
         "job_module.options.sbatch_options"),
        ("slurm", config_text("slurm", {"sbatch_options": f"--exclusive ; {touch}"}),
         "job_module.options.sbatch_options"),
        ("slurm", config_text("slurm", {"srun_options": ["--label", f"$({touch})"]}),
         "job_module.options.srun_options"),
        ("slurm", config_text("slurm", {"sbatch_options": f"--comment='{touch}"}),
         "job_module.options.sbatch_options"),
        ("slurm", config_text("slurm", hosts=f"$({touch})"), "simulation.node_host_names"),
        ("slurm", config_text("slurm", hosts="n[1-"), "simulation.node_host_names"),
        ("slurm", config_text("slurm", hosts="n[3-1]"), "simulation.node_host_names"),
        ("slurm", config_text("slurm", hosts=["n1", "n[a-b]"]), "simulation.node_host_names[1]"),
        ("slurm", config_text("slurm", hosts=[f"n1;{touch}"]), "simulation.node_host_names[0]"),
        ("sge", config_text("sge", {"queue": f"all.q|{touch}"}), "job_module.options.queue"),
        ("sge", config_text("sge", {"project": f"p({touch})"}), "job_module.options.project"),
        ("lsf", config_text("lsf", {"queue": f"normal;{touch}"}), "job_module.options.queue"),
    ]


def test_twenty_hostile_values_rejected_by_validate_and_none_executed(tmp_path: Path) -> None:
    sentinel = tmp_path / "SENTINEL"
    cases = hostile_cases(sentinel)
    assert len(cases) == 20
    for index, (module, text, key) in enumerate(cases):
        path = tmp_path / f"hostile{index}.yaml"
        path.write_text(text)
        done = subprocess.run([sys.executable, "-m", "djsb.cli", "validate", str(path)], capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
        where = f"case {index} ({module}): {done.stderr!r}"
        assert done.returncode == 2, where
        assert done.stdout == "" and done.stderr.count("\n") == 1, where
        assert re.match(rf"djsb: error: {re.escape(str(path))}:\d+: {re.escape(key)}: \S", done.stderr), where
    assert not sentinel.exists()


@pytest.mark.parametrize(("expression", "hosts"), [
    # 1-4 then 7: five hosts, in the order written
    ("n[1-4,7]", ["n1", "n2", "n3", "n4", "n7"]),
    # a zero-padded lower bound keeps its width: 08 09 10
    ("c[08-10]", ["c08", "c09", "c10"]),
    # two brackets: the product 2 x 2 = 4 names, the last bracket varying fastest
    ("r[1-2]n[5,7]", ["r1n5", "r1n7", "r2n5", "r2n7"]),
    ("login1.cluster.example", ["login1.cluster.example"]),
    ("n[3]-ib", ["n3-ib"]),
])
def test_hostlist_expansion(expression: str, hosts: list[str]) -> None:
    assert expand_hostlist(expression) == hosts


@pytest.mark.parametrize(("expression", "needle"), [
    ("n[1-", "unbalanced"), ("n1-]", "unbalanced"), ("n[[1-2]]", "unbalanced"), ("n[3-1]", "runs backwards"),
    ("n[a-b]", "is not a number"), ("n[]", "is not a number"), ("n[1-2,]", "is not a number"),
    (f"n[1-{MAX_HOSTS + 1}]", "more than"), ("-n1", "not a host name"), ("n_1", "not a host name"),
    ("a" * 64, "not a host name"), ("n1.", "not a host name"), ("n1\nx", "not a host name"),
])
def test_bad_hostlists(expression: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        expand_hostlist(expression)


def test_rfc1123_limits() -> None:
    # a label may have 63 characters, a name 253: 4 labels of 63 + 3 dots = 255 > 253
    assert check_hostname("a" * 63) == "a" * 63
    assert check_hostname(".".join(["a" * 63] * 3 + ["a" * 61]))  # 3*63 + 61 + 3 dots = 253
    with pytest.raises(ValueError):
        check_hostname(".".join(["a" * 63] * 4))


def test_host_list_string_splits_outside_brackets_only() -> None:
    assert split_host_list("n[1-2,5],m1 m2") == ["n[1-2,5]", "m1", "m2"]
    assert split_host_list("a,,b") == ["a", "b"]


@pytest.mark.parametrize(("check", "good", "bad"), [
    (slurm_name, ["normal", "proj-1.a", "High_QOS"], ["a b", "a,b", "a=b", "a#b", "", "a\n"]),
    (slurm_partitions, ["shared", "shared,debug"], ["shared,", "a;b", "a b"]),
    (sge_object_name, ["all.q", "smp", "h_vmem", "p$1"], ["all q", "q@h", "a/b", "a,b", "(x)", "x" * 513, "é"]),
    (lsf_queue_name, ["normal", "short-1", "x" * 59], ["default", "x" * 60, "a.b", "a b"]),
    (lsf_project_name, ["proj.a-1", "p" * 511], ["p" * 512, "a;b", "a b"]),
])
def test_scheduler_names(check: object, good: list[str], bad: list[str]) -> None:
    assert callable(check)
    for name in good:
        assert check(name) == name
    for name in bad:
        with pytest.raises(ValueError):
            check(name)


def test_argument_lists() -> None:
    # Slurm's feature expressions use | and & inside one value: passed quoted, never to a shell
    args = ("--exclusive", "--constraint=a|b&c", "-pe", "smp", "4", "--comment", "two words")
    assert check_arguments(args) == args
    for bad in (["x"], ["--ok", ";", "rm"], ["--a;b"], ["--c=`id`"], ["--c", "$(id)"], ["--c=a\nb"],
                ["--c=a\0b"], ["-"]):
        with pytest.raises(ValueError):
            check_arguments(bad)


def test_module_reads_the_checked_options() -> None:
    # the Slurm module built in code (no config file) runs the same checks
    with pytest.raises(ConfigError, match=r"job_module.options.partition: 'a b' is not a Slurm partition"):
        SlurmJobModule.read_options({"partition": "a b"})
    values = SlurmJobModule.read_options(located({"sbatch_options": "--exclusive --comment='a b'"}))
    assert values["sbatch_options"] == ("--exclusive", "--comment=a b")


@pytest.mark.parametrize(("module", "options", "hosts"), [
    ("slurm", {"partition": "shared,debug", "account": "proj-1", "qos": "normal",
               "sbatch_options": ["--exclusive", "--constraint=a|b"], "srun_options": "--label"}, "n[1-2],n4"),
    ("sge", {"queue": "all.q", "project": "p1", "submit_options": "-l h_vmem=1G"}, ["node1", "node2"]),
    ("lsf", {"queue": "normal", "project": "proj.a"}, None),
])
def test_the_same_configs_with_good_values_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     module: str, options: dict[str, object],
                                                     hosts: object) -> None:
    from djsb.cli import main
    from djsb.config import load_config

    path = tmp_path / "good.yaml"
    path.write_text(config_text(module, options, hosts))
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    if module == "slurm":
        assert load_config(path).simulation.node_host_names == ("n1", "n2", "n4")


def test_node_lists_inside_slurm_arguments_are_hostlists() -> None:
    values = SlurmJobModule.read_options({"sbatch_options": ["--exclude=n[1-2]", "-w", "n3,n4"]})
    assert values["sbatch_options"] == ("--exclude=n[1-2]", "-w", "n3,n4")
    # a value with '/' is a file of node names (sbatch(1)): not a hostlist
    assert SlurmJobModule.read_options({"sbatch_options": "--nodelist=/etc/nodes"})["sbatch_options"]
    for bad in (["--nodelist=n[1-"], ["-w", "n[3-1]"], ["--exclude", "n[a-b]"]):
        with pytest.raises(ConfigError, match="job_module.options.sbatch_options: "):
            SlurmJobModule.read_options({"sbatch_options": bad})
