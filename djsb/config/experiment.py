"""The experiment configuration (paper 001 sec. 2.1-2.3): YAML in, typed and validated config out.

Every error names the file, the line and the key path, and says what would be right, so
``djsb validate`` can be the first thing a user runs on a new config.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import string
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from djsb.apps import AppBuildError, apps_dir
from djsb.errors import ConfigError
from djsb.jobs.api import CpuCapacity, JobModule
from djsb.jobs.hostlist import expand_hostlist, split_host_list
from djsb.jobs.loader import load_job_module, module_class, runs_remotely
from djsb.machine import RUN_JOB_BYTES
from djsb.registry import UnknownName
from djsb.scenarios import SCENARIOS, scenario, scenario_names
from djsb.transport import Transport
from djsb.yamlnodes import (
    Located,
    as_bool,
    as_duration,
    as_int,
    as_size,
    as_str,
    check_count,
    describe,
    load_yaml,
    one_of,
    read_fields,
)

DEFAULT_COMMAND = ("{apps}/djsb-stream", "--memory", "{memory_per_task}", "--threads", "{cpus_per_task}",
                   "{work}", "--control", "{control_file}")
PLACEHOLDERS = ("apps", "cpus_per_task", "total_tasks", "memory_per_task", "exec_time", "control_file",
                "name")
"""The ``{name}`` a command argument may hold (filled in per job by djsb/harness/commands.py);
``{work}``, the amount of work, is not one of them: it is a whole argument, replaced by two."""

MAX_TASKS = 0xFFFFFFFD
"""The most tasks a job may have: Slurm holds a job's task count in 32 bits (``num_tasks``, with
0xFFFFFFFE and up meaning "not set"), and no scheduler DJSB drives counts further."""


@dataclass(frozen=True)
class GeneralConfig:
    """Global experiment options (paper 001 sec. 2.1)."""

    num_of_samples: int = 1
    sleep_min_time: float = 1.0
    sleep_max_time: float = 2.0
    num_of_ref_analysis: int = 1
    num_of_dyn_analysis: tuple[int, ...] = (1,)
    scenarios: tuple[str, ...] = field(default_factory=scenario_names)
    seed: int = 0
    poll_interval: float = 0.2


@dataclass(frozen=True)
class AppConfig:
    """One application's options (paper 001 sec. 2.3); total_memory in bytes, exec_time in seconds."""

    total_tasks: int
    cpus_per_task: int
    total_memory: int
    exec_time: float
    node_host_names: tuple[str, ...] = ()
    same_nodes_as_sim: bool = False
    command: tuple[str, ...] = DEFAULT_COMMAND

    @property
    def total_cpus(self) -> int:
        return self.total_tasks * self.cpus_per_task


SSH_TRANSPORTS = ("paramiko", "openssh")
"""The SSH clients job_module.ssh.transport can name."""


@dataclass(frozen=True)
class SSHConfig:
    """Run a command-based module's commands on a remote login node (host keys always verified).

    ``host`` may be an alias of the OpenSSH config (``ssh_config``, default ~/.ssh/config): port,
    user, key and ProxyJump come from there unless given here. ``transport``: ``paramiko`` (default,
    needs no ssh client) or ``openssh`` (the system ``ssh``, sharing a ControlMaster connection).
    Without ``apps_dir`` the apps are staged: copied to ``remote_dir`` and built there, after
    ``module load MODULES...`` when ``modules`` names some (e.g. ``[gcc/12, openmpi]``). A dropped
    connection is re-established for up to ``reconnect_for`` seconds.
    """

    host: str
    port: int | None = None
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    remote_dir: str = "djsb-runs"
    apps_dir: str | None = None
    connect_timeout: float = 15.0
    transport: str = "paramiko"
    ssh_config: str | None = None
    modules: tuple[str, ...] = ()
    reconnect_for: float = 300.0


@dataclass(frozen=True)
class JobModuleConfig:
    """Which job module runs the jobs (a name such as ``local`` or a path to a module file)."""

    name: str = "local"
    options: dict[str, Any] = field(default_factory=dict)
    ssh: SSHConfig | None = None


@dataclass(frozen=True)
class OutputConfig:
    """Where results go; a relative directory is relative to the current directory."""

    directory: str | None = None
    plots: bool = True


@dataclass(frozen=True)
class Config:
    """A whole, validated experiment."""

    general: GeneralConfig
    job_module: JobModuleConfig
    simulation: AppConfig
    analytics: AppConfig
    output: OutputConfig
    source: str = "<memory>"

    def to_dict(self) -> dict[str, Any]:
        """Plain data (lists, no tuples) that loads back as the same config: the resolved config."""
        data = json.loads(json.dumps(asdict(self)))
        data.pop("source")
        data["simulation"].pop("same_nodes_as_sim")
        data["output"] = {k: v for k, v in data["output"].items() if v is not None}
        if data["job_module"]["ssh"] is None:
            del data["job_module"]["ssh"]
        else:
            data["job_module"]["ssh"] = {k: v for k, v in data["job_module"]["ssh"].items() if v is not None}
        return data


def _string_list(node: Located) -> tuple[str, ...]:
    if isinstance(node.value, str):
        return tuple(part for part in re.split(r"[,\s]+", node.value) if part)
    if not isinstance(node.value, list):
        raise node.error(f"expected a list of strings, got {describe(node.value)}")
    return tuple(as_str(item) for item in node.value)


def _host_names(node: Located) -> tuple[str, ...]:
    """node_host_names: host names or hostlist expressions (n[1-4,7]), as a list or one string
    separated by commas or spaces, expanded to plain host names (djsb.jobs.hostlist)."""
    if isinstance(node.value, str):
        items = [(node, text) for text in split_host_list(node.value)]
    elif isinstance(node.value, list):
        items = [(item, as_str(item)) for item in node.value]
    else:
        raise node.error(f"expected host names, got {describe(node.value)}")
    hosts: list[str] = []
    for where, text in items:
        try:
            hosts += expand_hostlist(text)
        except ValueError as exc:
            raise where.error(str(exc)) from None
    return tuple(hosts)


def _scenario(node: Located) -> str:
    try:
        return SCENARIOS.canonical(as_str(node))
    except UnknownName:
        raise node.error(f"unknown scenario {node.value!r} (choose from {', '.join(scenario_names())})") \
            from None


def _scenarios(node: Located) -> tuple[str, ...]:
    items = [node] if isinstance(node.value, str) else None
    if items is None:
        if not isinstance(node.value, list) or not node.value:
            raise node.error(f"expected a non-empty list of scenarios, got {describe(node.value)}")
        items = node.value
    names = tuple(_scenario(item) for item in items)
    if len(set(names)) != len(names):
        raise node.error("a scenario is listed twice")
    return names


def _dyn_analysis(node: Located) -> tuple[int, ...]:
    if isinstance(node.value, list):
        if not node.value:
            raise node.error("expected a number or a non-empty list of numbers of analytics")
        values = tuple(as_int(item, 1) for item in node.value)
        if len(set(values)) != len(values):
            raise node.error("a number of analytics is listed twice")
        return values
    return (as_int(node, 1),)


def _command(node: Located) -> tuple[str, ...]:
    """An argv template: a string split as a shell would, or a list; its placeholders checked."""
    if isinstance(node.value, str):
        try:
            parts = tuple(shlex.split(node.value))
        except ValueError as exc:
            raise node.error(f"cannot split the command: {exc}") from None
        if not parts:
            raise node.error("the command is empty")
        for arg in parts:
            _check_placeholders(node, arg)
        return parts
    parts = _string_list(node)
    for item, arg in zip(node.value, parts, strict=True):
        _check_placeholders(item, arg)
    return parts


def _check_placeholders(node: Located, arg: str) -> None:
    """Every ``{name}`` of one argument known, and ``{work}`` only as the whole argument."""
    if arg == "{work}":
        return
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(arg) if name is not None]
    except ValueError as exc:
        raise node.error(f"bad braces in {arg!r}: {exc} (write {{{{ and }}}} for literal braces)") from None
    for name in fields:
        if name == "work":
            raise node.error(f"{{work}} must be a whole argument (it becomes two: --time SECONDS or "
                             f"--iterations N), not part of {arg!r}")
        if name not in PLACEHOLDERS:
            raise node.error(f"unknown placeholder {{{name}}} in {arg!r} (known: "
                             f"{', '.join('{' + known + '}' for known in PLACEHOLDERS)}, "
                             "and {work} as a whole argument)")


def _seconds(node: Located) -> float:
    """A time >= 0, a bare number in seconds (djsb.yamlnodes.parse_duration)."""
    return as_duration(node, unit="s")


def _positive_seconds(node: Located) -> float:
    """A time > 0, a bare number in seconds."""
    return as_duration(node, unit="s", strict=True)


def _general(node: Located) -> GeneralConfig:
    values = read_fields(node, {
        "num_of_samples": lambda n: as_int(n, 1),
        "sleep_min_time": _seconds,
        "sleep_max_time": _seconds,
        "num_of_ref_analysis": lambda n: as_int(n, 1),
        "num_of_dyn_analysis": _dyn_analysis,
        "scenarios": _scenarios,
        "seed": lambda n: as_int(n, 0),
        "poll_interval": _positive_seconds,
    })
    general = GeneralConfig(**values)
    if general.sleep_min_time > general.sleep_max_time:
        where = node.get("sleep_max_time") or node
        raise where.error(f"sleep_max_time ({general.sleep_max_time:g}) must be >= sleep_min_time "
                          f"({general.sleep_min_time:g})")
    per_sample = jobs_per_sample(general)
    check_count(node.get("num_of_dyn_analysis") or node.get("num_of_ref_analysis") or node, per_sample,
                RUN_JOB_BYTES, "jobs in each sample")
    check_count(node.get("num_of_samples") or node, per_sample * general.num_of_samples, RUN_JOB_BYTES,
                "jobs")
    return general


def jobs_per_sample(general: GeneralConfig) -> int:
    """The jobs one sample submits: its reference cell's simulation and analytics, then one
    simulation and ``n_a`` analytics in each execution cell (every scenario, every ``n_a``)."""
    execution = sum(1 + n_a for n_a in general.num_of_dyn_analysis) * len(general.scenarios)
    return 1 + general.num_of_ref_analysis + execution


def _app(node: Located, *, analytics: bool) -> AppConfig:
    schema: dict[str, Callable[[Located], Any]] = {
        "total_tasks": _task_count,
        "cpus_per_task": lambda n: as_int(n, 1),
        "total_memory": as_size,
        "exec_time": _positive_seconds,
        "node_host_names": _host_names,
        "command": _command,
    }
    if analytics:
        schema["same_nodes_as_sim"] = as_bool
    values = read_fields(node, schema)
    for required in ("total_tasks", "cpus_per_task", "total_memory", "exec_time"):
        if required not in values:
            raise node.error(f"missing key {required!r}")
    app = AppConfig(**values)
    if app.total_memory < app.total_tasks:
        raise node.mapping()["total_memory"].error(f"less than one byte for each of the {app.total_tasks} "
                                                   "tasks (total_tasks)")
    return app


def _task_count(node: Located) -> int:
    """``total_tasks``: a whole number from 1 to :data:`MAX_TASKS`."""
    tasks = as_int(node, 1)
    if tasks > MAX_TASKS:
        raise node.error(f"must be at most {MAX_TASKS} (a scheduler counts a job's tasks in 32 bits), "
                         f"got {tasks}")
    return tasks


def _names(node: Located) -> tuple[str, ...]:
    """A list of non-empty strings (a single string counts as a list of one)."""
    items = [node] if isinstance(node.value, str) else node.value
    if not isinstance(items, list):
        raise node.error(f"expected a list of names, got {describe(node.value)}")
    return tuple(as_str(item) for item in items)


def read_ssh(node: Located) -> SSHConfig:
    """A job_module.ssh section (or the same keys elsewhere: sweep.slurm.ssh)."""
    values = read_fields(node, {"host": as_str, "port": lambda n: as_int(n, 1), "user": as_str,
                          "key_file": as_str, "known_hosts": as_str, "remote_dir": as_str,
                          "apps_dir": as_str, "connect_timeout": _positive_seconds,
                          "transport": one_of(*SSH_TRANSPORTS), "ssh_config": as_str, "modules": _names,
                          "reconnect_for": _seconds})
    if "host" not in values:
        raise node.error("missing key 'host'")
    if values.get("port", 22) > 65535:
        raise node.mapping()["port"].error("a port is at most 65535")
    return SSHConfig(**values)


@dataclass(frozen=True)
class _ModuleFacts:
    """What the config reader learns from the module's class to check the applications against:
    the CPUs it can give, and whether it starts the applications' commands on this machine."""

    capacity: CpuCapacity | None
    runs_here: bool


def _job_module(node: Located) -> tuple[JobModuleConfig, _ModuleFacts]:
    """The module's name (registered, or a file path relative to the config) and its options, checked
    by the module's own option readers so a bad option names its line; and what it can run."""
    node.check_keys(frozenset({"name", "options", "ssh"}))
    name_node = node.get("name")
    name = as_str(name_node) if name_node else "local"
    try:
        cls = module_class(name, base_dir=Path(node.source).parent)
    except ConfigError as exc:  # the module file's own error, if any, kept for -v
        raise (name_node or node).error(exc.message) from exc.__cause__
    options_node = node.get("options") or Located({}, node.line, "job_module.options", node.source)
    capacity = cls.cpu_capacity(cls.read_options(options_node))
    ssh_node = node.get("ssh")
    ssh = read_ssh(ssh_node) if ssh_node else None
    if ssh_node is not None and not runs_remotely(cls):
        raise ssh_node.error(f"the {name} module runs jobs in this process and cannot run over SSH; "
                             "use a command-based module such as slurm")
    facts = _ModuleFacts(capacity, runs_here=cls.runs_commands and ssh is None)
    return JobModuleConfig(name=name, options=options_node.plain(), ssh=ssh), facts


def _output(node: Located) -> OutputConfig:
    return OutputConfig(**read_fields(node, {"directory": as_str, "plots": as_bool}))


def _check_program(node: Located, app: AppConfig) -> None:
    """The program an application's command starts exists here and is executable (else every job
    of the run fails). A program named through another placeholder than ``{apps}`` is known only
    per job, and is not checked. The bundled app is built on first use (djsb/apps/bundled.py)."""
    template = app.command[0]
    if {name for _, name, _, _ in string.Formatter().parse(template) if name} - {"apps"}:
        return
    where = node.get("command") or node
    try:
        program = template.format(apps=apps_dir(build="{apps}" in template))
    except AppBuildError as exc:
        raise where.error(exc.message) from exc
    if shutil.which(program) is not None:
        return
    if "/" not in program:
        raise where.error(f"command not found: no {program!r} on PATH")
    problem = "is not an executable file" if Path(program).exists() else "does not exist"
    build = " (build the apps with make -C apps, or set DJSB_APPS_DIR)" if "{apps}" in template else ""
    raise where.error(f"the command's program {program} {problem}{build}")


def _check_capacity(node: Located, app: AppConfig, capacity: CpuCapacity) -> None:
    """An application asks for no more CPUs than the module can give (else every job of it fails
    when submitted, in the middle of a run)."""
    sections = node.mapping()
    if app.cpus_per_task > capacity.per_task:
        raise sections["cpus_per_task"].error(f"{app.cpus_per_task} CPUs per task, but {capacity.where}")
    if capacity.per_job is not None and app.total_cpus > capacity.per_job:
        raise sections["total_tasks"].error(f"{app.total_tasks} tasks x {app.cpus_per_task} CPUs = "
                                            f"{app.total_cpus} CPUs, but {capacity.where}")


def _cross_checks(root: Located, general: GeneralConfig, sim: AppConfig, ana: AppConfig) -> None:
    """Rules that span sections: what the scenarios need to be meaningful."""
    ana_node = root.mapping()["analytics"]
    if ana.same_nodes_as_sim and ana.total_cpus > sim.total_cpus:
        raise ana_node.error(f"the analytics needs {ana.total_cpus} CPUs but shares the simulation's "
                             f"{sim.total_cpus} (same_nodes_as_sim): make it smaller or the simulation "
                             "larger")
    for name in general.scenarios:
        try:
            scenario(name).check(sim, ana)
        except ConfigError as exc:
            raise (root.get(exc.key or "analytics") or root).error(exc.message) from None


def config_from_tree(root: Located) -> Config:
    """Validate a located YAML tree into a Config."""
    root.check_keys(frozenset({"general", "job_module", "simulation", "analytics", "output"}))
    for required in ("simulation", "analytics"):
        if root.get(required) is None:
            raise root.error(f"missing section {required!r}")
    sections = root.mapping()
    general = _general(sections["general"]) if "general" in sections else GeneralConfig()
    job_module, facts = _job_module(sections.get("job_module")
                                    or Located({}, root.line, "job_module", root.source))
    simulation = _app(sections["simulation"], analytics=False)
    analytics = _app(sections["analytics"], analytics=True)
    output = _output(sections["output"]) if "output" in sections else OutputConfig()
    _cross_checks(root, general, simulation, analytics)
    for name, app in (("simulation", simulation), ("analytics", analytics)):
        if facts.capacity is not None:
            _check_capacity(sections[name], app, facts.capacity)
        if facts.runs_here:
            _check_program(sections[name], app)
    return Config(general, job_module, simulation, analytics, output, source=root.source)


def load_config(path: str | Path) -> Config:
    """Read and validate an experiment config file (raises ConfigError with file, line and key)."""
    return config_from_tree(load_yaml(Path(path)))


def check_node_capacity(config: Config, capacity: CpuCapacity) -> None:
    """The config's applications against the CPUs the scheduler says its nodes have
    (:meth:`JobModule.node_capacity`): the same check, and the same one-line error naming the
    config's ``cpus_per_task`` or ``total_tasks`` line, as for a capacity known without asking."""
    sections = load_yaml(Path(config.source)).mapping()
    for name, app in (("simulation", config.simulation), ("analytics", config.analytics)):
        _check_capacity(sections[name], app, capacity)


def open_module(config: Config, transport: Transport) -> JobModule:
    """The config's job module on ``transport``; its option errors are reported against the config file."""
    try:
        return load_job_module(config.job_module.name, config.job_module.options, transport,
                               base_dir=Path(config.source).parent)
    except ConfigError as exc:
        if exc.source is not None:
            raise
        raise ConfigError(exc.message, source=config.source, key=exc.key) from None
