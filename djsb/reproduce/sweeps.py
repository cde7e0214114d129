"""Run a ``djsb sweep`` config from configs/ as a library call, possibly with some of its keys
replaced (``--full`` sizes): the changed config is written beside the sweep, its relative paths made
absolute, so the sweep directory says what ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from djsb.errors import RunError
from djsb.machine import usable_cpus
from djsb.sweep.run import SweepRequest, run_sweep
from djsb.yamlnodes import load_yaml

SWEEP_JOBS = 2
"""Worker processes: the two cores the default sizes are measured on (fewer on a machine with one)."""


def absolute_paths(value: Any, base: Path) -> Any:
    """``value`` with every string that names an existing file relative to ``base`` made absolute."""
    if isinstance(value, dict):
        return {key: absolute_paths(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [absolute_paths(item, base) for item in value]
    if isinstance(value, str) and ("/" in value) and (base / value).is_file():
        return str((base / value).resolve())
    return value


def changed_config(config: Path, out_dir: Path, changes: dict[tuple[str, ...], Any] | None) -> Path:
    """``config`` with ``changes`` applied (values replaced, each at its path of keys, such as
    ``("sweep", "zip", "workload.limit")``), written into ``out_dir`` with its relative paths made
    absolute; ``config`` itself without changes."""
    if not changes:
        return config
    data = absolute_paths(load_yaml(config).plain(), config.parent)
    for keys, value in changes.items():
        node = data
        *parents, last = keys
        for part in parents:
            node = node[part]
        node[last] = value
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / config.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run_config_sweep(config: Path, out_dir: Path, changes: dict[tuple[str, ...], Any] | None = None) -> Path:
    """Run the sweep of ``config`` with ``changes`` (:func:`changed_config`) into ``out_dir``; return
    ``out_dir``. Finished points are kept, as ``djsb sweep`` keeps them, so a second call completes an
    interrupted one."""
    path = changed_config(config, out_dir, changes)
    status, _ = run_sweep(SweepRequest(path, out_dir, jobs=min(SWEEP_JOBS, usable_cpus())), out_dir)
    if status:
        raise RunError(f"the sweep of {config.name} ended with status {status} ({out_dir})")
    return out_dir
