"""Staging the benchmark apps on a remote host and bringing the job files back.

``djsb run`` over SSH copies the apps' sources (djsb/apps/: its Makefile and C sources) to
``REMOTE_DIR/apps-HASH/apps`` and builds them there with the cluster's compiler (``make -C apps``:
the Makefile adds the MPI variant when ``mpicc`` exists), after ``module load`` of the config's
modules. HASH is a digest of the sources, so a source version is built once per remote directory
and reused by later runs (a ``built`` marker is written after a successful build). The job output
and control files the run writes remotely are copied into the local run directory as each cell
ends.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from djsb.apps import app_sources, source_hash
from djsb.errors import one_line
from djsb.remote.errors import RemoteUnusable
from djsb.transport import Transport

BUILD_TIMEOUT_S = 600.0
BUILT_MARKER = "built"


def build_command(stage_dir: PurePosixPath, modules: Iterable[str]) -> str:
    """``module load ...`` (when modules are named), then ``make -C apps`` in ``stage_dir``, its
    output kept in build.log; the ``built`` marker only after a successful build. Every value is
    shell-quoted."""
    steps = [f"cd {shlex.quote(str(stage_dir))}"]
    names = list(modules)
    if names:
        steps.append(shlex.join(["module", "load", *names]))
    steps.append("make -C apps > build.log 2>&1")
    steps.append(f"touch {BUILT_MARKER}")
    return " && ".join(steps)


def stage_apps(transport: Transport, remote_dir: str, apps_dir: Path,
               modules: Iterable[str]) -> PurePosixPath:
    """The remote bin directory of this source version, staged and built first unless it was."""
    sources = app_sources(apps_dir)
    stage_dir = PurePosixPath(remote_dir) / f"apps-{source_hash(sources)}"
    bin_dir = stage_dir / "apps" / "bin"
    if transport.run(f"test -e {shlex.quote(str(stage_dir / BUILT_MARKER))}").returncode == 0:
        return bin_dir
    made = transport.run(shlex.join(["mkdir", "-p", str(stage_dir / "apps")]))
    if made.returncode != 0:
        raise RemoteUnusable(f"cannot create {stage_dir}: {one_line(made.stderr)}",
                             key="job_module.ssh.remote_dir")
    for name, text in sources.items():
        transport.write_text(str(stage_dir / "apps" / name), text)
    built = transport.run(build_command(stage_dir, modules), timeout=BUILD_TIMEOUT_S)
    if built.returncode != 0:
        log = transport.read_text(str(stage_dir / "build.log")) or built.stderr
        tail = one_line("\n".join(log.strip().splitlines()[-3:]))
        raise RemoteUnusable(f"building the apps in {stage_dir} failed (exit {built.returncode}): {tail}",
                             key="job_module.ssh.modules")
    return bin_dir


def remote_files(transport: Transport, files_dir: PurePosixPath) -> list[str]:
    """The files under ``files_dir`` on the remote host, as paths relative to it."""
    found = transport.run(f"cd {shlex.quote(str(files_dir))} && find . -type f")
    return sorted(line[2:] for line in found.stdout.splitlines()
                  if line.startswith("./") and not line.endswith(".tmp"))  # .tmp: a write in progress


class ResultFetcher:
    """Copies the run's remote job files (outputs, control files, batch scripts) into the local run
    directory, each file once: called when a cell ends, every file in it is final."""

    def __init__(self, transport: Transport, files_dir: PurePosixPath, run_path: Path) -> None:
        self.transport = transport
        self.files_dir = files_dir
        self.run_path = run_path
        self.fetched: set[str] = set()

    def fetch(self) -> int:
        """Copy the files not copied yet; how many were."""
        new = [name for name in remote_files(self.transport, self.files_dir) if name not in self.fetched]
        for name in new:
            text = self.transport.read_text(str(self.files_dir / name))
            if text is not None:
                target = self.run_path / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        self.fetched.update(new)
        return len(new)
