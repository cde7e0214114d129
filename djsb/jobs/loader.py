"""Find and build job modules: by registered name (``local``, ``slurm``, ...) or by a user file's path.

A built-in module registers itself with the :func:`register` decorator; the registry imports every
module of the ``job_modules`` package once to collect them. An installed package adds modules through
the entry point group ``djsb.job_modules`` (name = "package.module:Class"). A user's file, given by
path, defines ``MODULE``, a :class:`djsb.jobs.JobModule` subclass (see job_modules/template.py).
Every module is constructed as ``MODULE(options, transport)``.

This is the only place in djsb/ that imports job_modules/ (design notes: dependencies point one way).
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from djsb.errors import ConfigError
from djsb.jobs.api import CommandJobModule, JobModule
from djsb.registry import Registry
from djsb.transport import Transport
from djsb.yamlnodes import Located

BUILTIN_PACKAGE = "job_modules"
ENTRY_POINT_GROUP = "djsb.job_modules"
NAME_KEY = "job_module.name"
M = TypeVar("M", bound=type[JobModule])

MODULES: Registry[type[JobModule]] = Registry("job module", BUILTIN_PACKAGE, ENTRY_POINT_GROUP)
"""Every module known by name (built in, or from an installed package's entry point)."""


def register(name: str) -> Callable[[M], M]:
    """Class decorator: make the module available as ``job_module: {name: <name>}``."""
    return MODULES.register(name)  # type: ignore[return-value]


def registered() -> Mapping[str, type[JobModule]]:
    """Every module known by name, by name."""
    return {name: MODULES.get(name) for name in sorted(MODULES.names())}


def is_path(name: str) -> bool:
    """A module named by a file path rather than a registered name."""
    return name.endswith(".py") or "/" in name


def _import_file(path: Path) -> ModuleType:
    """The user's module file, run as an import. Whatever its code raises (a SyntaxError, an
    ImportError of a package it needs, any exception at its top level) is a ConfigError naming
    the file and line where it went wrong (the original is its cause, shown by ``-v``)."""
    spec = importlib.util.spec_from_file_location(f"djsb_user_module_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path} as a Python module", key=NAME_KEY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import does: the file's classes can find their module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code may raise anything: each is the user's mistake
        sys.modules.pop(spec.name, None)
        raise ConfigError(f"cannot import the module: {import_failure(exc, path)}", key=NAME_KEY) from exc
    return module


def import_failure(exc: BaseException, path: Path) -> str:
    """Where and why importing ``path`` failed, in one line: ``FILE:LINE: Type: message``, the line
    being the syntax error's, else the deepest line of ``path`` the exception went through."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else str(path)
        return f"{where}: {type(exc).__name__}: {exc.msg}"
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if Path(frame.filename).resolve() == path.resolve()]
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else str(path)
    return f"{where}: {type(exc).__name__}: {exc}"


def _module_file_class(path: Path, name: str) -> type[JobModule]:
    if not path.is_file():
        raise ConfigError(f"no module file at {path}", key=NAME_KEY)
    cls = getattr(_import_file(path), "MODULE", None)
    if not (isinstance(cls, type) and issubclass(cls, JobModule)):
        raise ConfigError(f"{name} does not define MODULE = <a JobModule subclass>", key=NAME_KEY)
    return cls


def module_class(name: str, *, base_dir: Path = Path(".")) -> type[JobModule]:
    """The class of module ``name``: a registered name, or a .py path relative to ``base_dir``."""
    if is_path(name):
        return _module_file_class(Path(name) if Path(name).is_absolute() else base_dir / name, name)
    known = registered()
    if name not in known:
        raise ConfigError(f"unknown job module {name!r} (built in: {', '.join(known)}; or a path to a "
                          ".py file written from job_modules/template.py)", key=NAME_KEY)
    return known[name]


def runs_remotely(cls: type[JobModule]) -> bool:
    """Whether the module's commands can run on another host (job_module.ssh): command-based modules
    can; the ones that run jobs in this process (local, simulated) cannot."""
    return issubclass(cls, CommandJobModule)


def load_job_module(name: str, options: Mapping[str, Any] | Located, transport: Transport, *,
                    base_dir: Path = Path(".")) -> JobModule:
    """Module ``name`` built with ``options`` on ``transport``."""
    return module_class(name, base_dir=base_dir)(options, transport)  # type: ignore[call-arg]
