"""Point runners: what runs one sweep point, by the name a sweep config gives as ``sweep.runner``.

A runner is called as ``runner(point, out_dir)`` in a worker process with the point's config (a
located tree: :meth:`Located.plain` is the plain mapping, ``point.source`` the sweep file, against
whose directory relative paths resolve) and the empty directory to write the point's outputs in; it
returns the point's metrics. If it wrote no ``metrics.json`` there, the sweep writes the returned
mapping as one. An experiment command whose function is ``run_point(config_mapping, out_dir)``
(the shared point-runner interface) registers it with :func:`register_mapping_runner` in a file of this
package: adding a runner is adding one file (djsb.registry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from djsb.registry import Registry
from djsb.yamlnodes import Located

PointRunner = Callable[[Located, Path], Mapping[str, Any]]

POINT_RUNNERS: Registry[PointRunner] = Registry("sweep runner", "djsb.sweep.runners")


@dataclass(frozen=True)
class MappingRunner:
    """A runner built on a ``run_point(config_mapping, out_dir)`` function (plain data, no lines)."""

    run_point: Callable[[dict[str, Any], Path], Mapping[str, Any]]

    def __call__(self, point: Located, out_dir: Path) -> Mapping[str, Any]:
        return self.run_point(point.plain(), out_dir)


def register_mapping_runner(name: str) -> Callable[[Callable[[dict[str, Any], Path], Mapping[str, Any]]],
                                                   Callable[[dict[str, Any], Path], Mapping[str, Any]]]:
    """Decorator: register a ``run_point(config_mapping, out_dir)`` function as the runner ``name``."""

    def decorate(run_point: Callable[[dict[str, Any], Path], Mapping[str, Any]]
                 ) -> Callable[[dict[str, Any], Path], Mapping[str, Any]]:
        POINT_RUNNERS.register(name)(MappingRunner(run_point))
        return run_point

    return decorate
