"""Find and build a job module: by name (``local``, ``slurm``, ...) or by a path to a user's file.

A module file defines ``MODULE``, a :class:`job_modules.template.JobModule` subclass constructed
as ``MODULE(options, transport)`` (see job_modules/template.py).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

from djsb.config import BUILTIN_MODULES
from djsb.errors import ConfigError
from djsb.transport import Transport
from job_modules.template import JobModule


def _import_file(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"djsb_user_module_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import {path} as a Python module", key="job_module.name")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_job_module(name: str, options: dict[str, Any], transport: Transport, *,
                    base_dir: Path = Path(".")) -> JobModule:
    """The job module called ``name`` (a built-in name or a .py path relative to ``base_dir``)."""
    if name.endswith(".py") or "/" in name:
        path = Path(name) if Path(name).is_absolute() else base_dir / name
        if not path.is_file():
            raise ConfigError(f"no module file at {path}", key="job_module.name")
        module = _import_file(path)
    elif name in BUILTIN_MODULES:
        module = importlib.import_module(f"job_modules.{name}")
    else:
        raise ConfigError(f"unknown job module {name!r} (built in: {', '.join(BUILTIN_MODULES)})",
                          key="job_module.name")
    cls = getattr(module, "MODULE", None)
    if not (isinstance(cls, type) and issubclass(cls, JobModule)):
        raise ConfigError(f"{name} does not define MODULE = <a JobModule subclass>", key="job_module.name")
    return cls(options, transport)
