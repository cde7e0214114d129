"""djsb's packages form layers without cycles (docs/architecture.md).

The graph's nodes are djsb's top-level subpackages and modules (``djsb/model/``, ``djsb/config/``,
``djsb/metrics.py``...); an edge is any ``import``/``from ... import`` in a module of one node
naming another node, absolute or relative, at module level or inside a function: an import
deferred to a function is still a dependency. Only imports under ``if TYPE_CHECKING:`` are left
out: they never run. The test fails on any cycle (a strongly connected component of more than one
node, named with the imports that make it) and on any import of a node from a lower layer than
its own, so that a new upward import fails here before it can close a cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import djsb

ROOT = Path(djsb.__file__).resolve().parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "machine"),
    ("registry", "clock", "csvrows", "filelock", "progress", "noise", "transport", "yamlnodes", "plotting",
     "version", "completion", "outcome"),
    ("appmodel", "footprint", "jobs", "scenarios", "workloads", "pool", "outdir"),
    ("model", "metrics", "config"),
    ("remote", "workflows", "harness"),
    ("report",),
    ("simulate",),
    ("sweep",),
    ("calibrate", "reproduce"),
    ("validate",),
    ("cli",),
    ("__main__",),
)
"""The layers, lowest first: a node may import only nodes of lower layers (and nothing of its own
layer). The reason for each placement is in docs/architecture.md ("Layers")."""


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
    """The node of a dotted module name inside djsb (None for djsb itself and other packages)."""
    parts = module.split(".")
    return parts[1] if parts[0] == "djsb" and len(parts) > 1 else None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the import statements under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    return skipped


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


def imports() -> Iterator[Import]:
    """Every import from one node of djsb to another."""
    for path in sorted(ROOT.rglob("*.py")):
        module = module_name(path)
        source = node_of(module)
        if source is None:
            continue
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        skipped = type_checking_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
                for name in imported_modules(node, package):
                    target = node_of(name)
                    if target is not None and target != source:
                        yield Import(source, target, module, node.lineno)


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
    """Every node: each top-level module and subpackage of djsb."""
    return {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"} | \
        {p.parent.name for p in ROOT.glob("*/__init__.py")}


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


def test_imports_go_down_the_layers() -> None:
    layer = {name: level for level, names in enumerate(LAYERS) for name in names}
    upward = [f"{i} (layer {layer[i.source]} -> {layer[i.target]})" for i in imports()
              if layer.get(i.target, -1) >= layer.get(i.source, len(LAYERS))]
    assert not upward, "imports of a node of the same or a higher layer:\n" + "\n".join(upward)


def test_the_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
