"""What djsb imports is what pyproject.toml declares: `pip install djsb` brings what `djsb run`
needs, the extras the rest ([ssh] paramiko, [docker] for the container tests, [test])."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

REPO = Path(__file__).resolve().parent.parent
DISTRIBUTION = {"yaml": "pyyaml", "jinja2": "jinja2", "numpy": "numpy", "pandas": "pandas", "scipy": "scipy",
                "matplotlib": "matplotlib", "tqdm": "tqdm", "paramiko": "paramiko", "docker": "docker"}
"""The distribution that provides each top-level module a djsb module may import."""


def third_party_imports(root: Path) -> dict[str, set[str]]:
    """Each top-level module imported by a file under ``root`` that is neither the standard library
    nor djsb's own, with the files that import it."""
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in {"djsb", "job_modules"}:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def declared(requirements: list[str]) -> set[str]:
    return {requirement.split(">")[0].split("[")[0].split("=")[0].strip().lower() for requirement in requirements}


def test_every_import_is_declared_and_ssh_and_docker_are_extras() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = declared(project["dependencies"])
    extras = {name: declared(requirements) for name, requirements in project["optional-dependencies"].items()}
    imports = {**third_party_imports(REPO / "djsb"), **third_party_imports(REPO / "job_modules")}
    unknown = set(imports) - set(DISTRIBUTION)
    assert not unknown, f"imported but not in DISTRIBUTION: {unknown}"
    needed = {DISTRIBUTION[module] for module in imports}
    assert needed - {"paramiko"} <= runtime, f"imported, undeclared: {needed - {'paramiko'} - runtime}"
    assert runtime <= needed, f"declared, never imported by djsb: {runtime - needed}"
    # paramiko only in djsb/remote, behind the [ssh] extra; docker never at run time
    assert "paramiko" not in runtime and extras["ssh"] == {"paramiko"}
    assert imports["paramiko"] <= {"djsb/remote/hosts.py", "djsb/remote/paramiko_transport.py"}
    assert "docker" not in runtime and "docker" not in imports and extras["docker"] == {"docker"}
    # make setup installs [test]: the extras the tests use come with it
    assert "djsb" in extras["test"] and any("ssh" in r and "docker" in r for r in project["optional-dependencies"]["test"])


BLOCK = "import sys\nfor name in ('paramiko', 'docker'):\n    sys.modules[name] = None  # import fails\n"


def test_djsb_run_needs_neither_paramiko_nor_docker(tmp_path: Path) -> None:
    config = yaml.safe_load((REPO / "configs" / "simulated-quick.yaml").read_text())
    config["general"].update(num_of_samples=1, scenarios=["dynamic"], num_of_dyn_analysis=[1])
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(config))
    script = BLOCK + f"from djsb.cli import main\nsys.exit(main(['run', '-q', {str(path)!r}, '-o', {str(tmp_path / 'run')!r}]))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "summary.csv").is_file()


def test_the_paramiko_transport_without_paramiko_is_one_line_naming_the_extra() -> None:
    script = BLOCK + ("from djsb.config import SSHConfig\nfrom djsb.remote.connect import remote_transport\n"
                      "remote_transport(SSHConfig(host='login'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 1 and "InputError" in done.stderr
    assert "the paramiko transport needs paramiko: pip install 'djsb[ssh]', or set transport: openssh" in done.stderr


def test_the_openssh_transport_needs_no_paramiko(tmp_path: Path) -> None:
    script = BLOCK + ("from djsb.config import SSHConfig\nfrom djsb.remote.connect import remote_transport\n"
                      "print(type(remote_transport(SSHConfig(host='login', transport='openssh'))).__name__)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OpenSSHTransport"

