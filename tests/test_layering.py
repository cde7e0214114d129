"""djsb's packages and the job modules form layers without cycles (docs/architecture.md).

The graph's nodes are djsb's top-level subpackages and modules (``djsb/model/``, ``djsb/config/``,
``djsb/benchmark_metrics.py``...) and the ``job_modules`` package; an edge is any ``import``/``from ... import``
in a module of one node naming another node, absolute or relative, at module level, inside a function
or under ``if TYPE_CHECKING:`` (a type-only import is still a dependency of the code's design, and
hiding one is how a cycle hides). The test fails on any cycle (a strongly connected component of more
than one node, named with the imports that make it) and on any import of a node from a lower layer
than its own, so that a new upward import fails here before it can close a cycle. djsb finds job
modules only by name (``djsb.jobs.loader``), so no module of djsb imports ``job_modules``, and one
scheduler's package never imports another's. Commands are thin modules over libraries: no command
module imports another (``COMMANDS``), so what two commands share lives in a library below both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import djsb

ROOT = Path(djsb.__file__).resolve().parent
JOB_MODULES = ROOT.parent / "job_modules"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "machine"),
    ("registry", "clock", "csvrows", "filelock", "interrupts", "progress", "noise", "transport", "yamlnodes", "plotting",
     "version", "completion", "outcome"),
    ("slurm_text",),
    ("setting",),
    ("apps", "appmodel", "examples", "footprint", "jobs", "scenarios", "workloads", "pool", "outdir"),
    ("model", "benchmark_metrics", "config"),
    ("remote", "workflows", "harness", "job_modules", "slurmsite"),
    ("report",),
    ("simulate",),
    ("sweep",),
    ("calibrate", "reproduce", "history"),
    ("validate",),
    ("commands",),
    ("cli",),
    ("__main__",),
)
"""The layers, lowest first: a node may import only nodes of lower layers (and nothing of its own
layer). The reason for each placement is in docs/architecture.md ("Layers")."""

COMMANDS: dict[str, str] = {
    "simulate": "djsb.simulate.command", "replay-stats": "djsb.simulate.replay_stats",
    "wrappers": "djsb.simulate.wrappers", "calibrate": "djsb.calibrate.run",
    "history": "djsb.history.replay", "pool": "djsb.sweep.pool_command", "validate": "djsb.validate",
    "reproduce": "djsb.reproduce", "compare": "djsb.report.compare", "psp-report": "djsb.report.psp_scenarios",
}
"""The work modules: for each subcommand whose work is a module of its own, the module its command
module (djsb/commands/NAME.py, which declares its arguments and holds its body) imports that work
from. ``djsb run``, ``report`` and ``init`` drive their libraries themselves; ``djsb sweep`` calls
``djsb.sweep.run.run_sweep``, which ``djsb pool`` and the reproductions run too: a library."""
CLI_LINES = 250
"""djsb/cli.py only builds the parser from the command modules and dispatches: at most this long."""


@dataclass(frozen=True)
class Import:
    """One import of ``target`` by ``module`` at ``line``."""

    source: str
    target: str
    module: str
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports djsb.{self.target}"


def node_of(module: str) -> str | None:
    """The node of a dotted module name inside djsb or job_modules (None for djsb itself and other
    packages)."""
    parts = module.split(".")
    if parts[0] == "job_modules":
        return "job_modules"
    return parts[1] if parts[0] == "djsb" and len(parts) > 1 else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The absolute module names an import statement names."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        prefix = ".".join(base)
        return [f"{prefix}.{node.module}"] if node.module else [f"{prefix}.{a.name}" for a in node.names]
    if node.module == "djsb":
        return [f"djsb.{alias.name}" for alias in node.names]
    return [node.module or ""]


def module_imports() -> Iterator[tuple[str, str, int]]:
    """Every import statement of djsb and job_modules: (importing module, imported module, line)."""
    for path in sorted([*ROOT.rglob("*.py"), *JOB_MODULES.rglob("*.py")]):
        module = module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in imported_modules(node, package):
                    yield module, name, node.lineno


def imports() -> Iterator[Import]:
    """Every import from one node to another."""
    for module, name, line in module_imports():
        source, target = node_of(module), node_of(name)
        if source is not None and target is not None and target != source:
            yield Import(source, target, module, line)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def nodes() -> set[str]:
    """Every node: each top-level module and subpackage of djsb, and job_modules."""
    return {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"} | \
        {p.parent.name for p in ROOT.glob("*/__init__.py")} | {"job_modules"}


def test_no_import_cycle_joins_djsbs_packages() -> None:
    found = list(imports())
    edges: dict[str, set[str]] = {}
    for item in found:
        edges.setdefault(item.source, set()).add(item.target)
    problems = []
    for component in cycles(edges):
        members = set(component)
        inside = [str(i) for i in found if i.source in members and i.target in members]
        problems.append(f"cycle {' <-> '.join(component)}:\n    " + "\n    ".join(inside))
    assert not problems, "\n".join(problems)


def test_every_node_has_a_layer() -> None:
    placed = [name for layer in LAYERS for name in layer]
    assert len(placed) == len(set(placed)), "a node is in two layers"
    assert nodes() == set(placed), f"not placed: {sorted(nodes() - set(placed))}; " \
                                    f"gone: {sorted(set(placed) - nodes())}"


def test_no_import_cycle_joins_the_modules_of_a_package() -> None:
    """Inside each package (``djsb.model``, ``job_modules``...) the modules and subpackages one level
    down form no cycle either, type-only imports included: e.g. a backfill planner sees the core
    through its view, and the core imports the planners, never the other way round."""
    def member(module: str) -> tuple[str, str] | None:
        parts = module.split(".")
        if parts[0] == "djsb" and len(parts) >= 3:
            return parts[1], parts[2]
        return ("job_modules", parts[1]) if parts[0] == "job_modules" and len(parts) >= 2 else None

    graphs: dict[str, dict[str, set[str]]] = {}
    for module, name, _ in module_imports():
        source, target = member(module), member(name)
        if source and target and source[0] == target[0] and source[1] != target[1]:
            graphs.setdefault(source[0], {}).setdefault(source[1], set()).add(target[1])
    found = [f"{package}: {' <-> '.join(component)}" for package, edges in sorted(graphs.items())
             for component in cycles(edges)]
    assert not found, "import cycles inside packages:\n" + "\n".join(found)


def test_imports_go_down_the_layers() -> None:
    layer = {name: level for level, names in enumerate(LAYERS) for name in names}
    upward = [f"{i} (layer {layer[i.source]} -> {layer[i.target]})" for i in imports()
              if layer.get(i.target, -1) >= layer.get(i.source, len(LAYERS))]
    assert not upward, "imports of a node of the same or a higher layer:\n" + "\n".join(upward)


def test_the_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_djsb_finds_job_modules_only_by_name() -> None:
    statements = [f"{module}:{line} imports {name}" for module, name, line in module_imports()
                  if module.startswith("djsb.") and name.split(".")[0] == "job_modules"]
    assert not statements, "djsb imports a job module (find it through djsb.jobs.loader):\n" + \
        "\n".join(statements)


def test_no_scheduler_package_imports_another() -> None:
    def package(module: str) -> str:
        return module.split(".")[1] if module.startswith("job_modules.") and module.count(".") else module

    crossing = [f"{module}:{line} imports {name}" for module, name, line in module_imports()
                if module.startswith("job_modules.") and name.startswith("job_modules.")
                and package(module) != package(name)]
    assert not crossing, "\n".join(crossing)


def command_module_imports(name: str) -> set[str]:
    """The modules djsb/commands/NAME.py imports (``-`` in a subcommand's name is ``_`` there)."""
    path = ROOT / "commands" / f"{name.replace('-', '_')}.py"
    return {imported for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, (ast.Import, ast.ImportFrom))
            for imported in imported_modules(node, "djsb.commands")}


def test_each_command_module_dispatches_to_its_work() -> None:
    missing = [f"djsb/commands/{name.replace('-', '_')}.py does not import {module}"
               for name, module in COMMANDS.items() if module not in command_module_imports(name)]
    assert not missing, "\n".join(missing)


def test_the_cli_only_builds_the_parser_and_dispatches() -> None:
    from djsb.cli import COMMANDS as DECLARED

    lines = len((ROOT / "cli.py").read_text().splitlines())
    assert lines <= CLI_LINES, f"djsb/cli.py has {lines} lines: a command's arguments and body go in djsb/commands/"
    modules = {path.stem for path in (ROOT / "commands").glob("*.py")} - {"__init__", "frame"}
    assert {command.name.replace("-", "_") for command in DECLARED} == modules
    assert {name for name in COMMANDS} <= {command.name for command in DECLARED}


def command_crossings(statements: list[tuple[str, str, int]], commands: set[str],
                      packages: set[str]) -> list[str]:
    """The imports (``statements``: importing module, imported module, line) by which a command
    module reaches another: directly, or through a package of ``packages`` whose ``__init__``
    re-exports one."""
    exporters = {module: {name for m, name, _ in statements if m == module and name in commands}
                 for module in packages}
    return [f"{module}:{line} imports {name}" for module, name, line in statements
            if module in commands and name != module
            and (name in commands or exporters.get(name, set()) - {module})]


def test_no_command_module_imports_another() -> None:
    packages = {module_name(path) for path in ROOT.rglob("__init__.py")}
    command_modules = {f"djsb.commands.{path.stem}" for path in (ROOT / "commands").glob("*.py")
                       if path.stem not in ("__init__", "frame")}
    statements = list(module_imports())
    crossing = (command_crossings(statements, set(COMMANDS.values()), packages)
                + command_crossings(statements, command_modules, packages))
    assert not crossing, "a command module imports another (move what they share into a library):\n" + \
        "\n".join(crossing)


def test_the_check_finds_a_command_importing_another() -> None:
    commands = {"p.a", "p.b", "q"}
    statements = [("p.a", "p.lib", 1), ("p.a", "p.b", 2), ("q", "p", 3), ("p", "p.b", 1), ("p.lib", "p.b", 4)]
    assert command_crossings(statements, commands, {"p"}) == ["p.a:2 imports p.b", "q:3 imports p"]
