"""Where a config's jobs come from: an SWF trace or a named generator, read from a config section.

Every config that replays jobs names them the same way: a trace's path (``swf:`` in a simulate or
calibrate config, ``trace:`` in the simulated job module's ``background``), or ``generator: NAME``
with its ``params`` (the simulated module's ``synthetic: {...}`` is ``poisson_exponential``'s
params). This module is the one reader of those keys, so a path that does not exist, an unknown
generator, a misspelt or mistyped parameter and a value the generator refuses are each reported
at the line of their own key. What each config then does with the jobs (a window, scaling,
estimates, shaping) stays with that config's reader.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from djsb.errors import ConfigError, InputError
from djsb.setting import readers, setting
from djsb.workloads import synthetic
from djsb.workloads.job import TraceJob
from djsb.workloads.swf import SkippedRecord, Workload, read_swf
from djsb.yamlnodes import Located, as_int, as_path, as_str, check_arguments

GENERATORS: dict[str, Callable[..., list[TraceJob]]] = {
    "poisson_exponential": synthetic.poisson_exponential,
    "static_lognormal_004": synthetic.static_lognormal_004,
    "empty": lambda seed: [],
}
"""The workload generators a config names (``generator: NAME``); each takes a ``seed``."""


@dataclass(frozen=True)
class SourceKeys:
    """The keys of a section that say where its jobs come from, declared for the section's schema
    and the reference page; :func:`read_source` reads them (a path needs the config's directory, a
    generator the config's seed), each error at its key's line."""

    swf: Located | None = setting(None, lambda n: n, "", "",
                                  "an SWF trace (plain or gzip), relative to the config's directory; exactly "
                                  "one of swf and generator", where="workload")
    limit: int | None = setting(None, lambda n: as_int(n, 1), "jobs", "",
                                "with swf: only the trace's first N jobs", where="workload")
    generator: Located | None = setting(None, lambda n: n, "", "",
                                        f"a workload generator: {', '.join(GENERATORS)}", where="workload")
    params: Located | None = setting(None, lambda n: n, "", "",
                                     "with generator: its parameters (a mapping; its seed the config's by "
                                     "default)", where="workload")


SOURCE_KEYS = readers(SourceKeys)
"""The keys :func:`read_source` reads (with its default ``trace_key``), for a caller's schema of its
section: the caller's :func:`~djsb.yamlnodes.read_fields` checks the section's keys, this module
reads these."""


@dataclass(frozen=True)
class Source:
    """A section's jobs, the trace records its reader skipped (none for a generator) and the trace
    they came from (None for a generator), which a window is taken from."""

    jobs: list[TraceJob]
    skipped: list[SkippedRecord]
    trace: Workload | None


def read_trace(node: Located, base: Path, limit: int | None = None) -> Workload:
    """The SWF trace whose path is ``node`` (relative to ``base``), its first ``limit`` records;
    a missing file is an error at ``node``'s line, a bad record one at the trace's own line."""
    return read_swf(as_path(node, base), limit=limit)


def generator_name(node: Located) -> str:
    """The name of one of :data:`GENERATORS`."""
    name = as_str(node)
    if name not in GENERATORS:
        raise node.error(f"unknown generator (choose from {', '.join(GENERATORS)})")
    return name


def generated(name: str, params_node: Located | None, seed: int, at: Located) -> list[TraceJob]:
    """The jobs of generator ``name`` with the parameters of ``params_node`` (a mapping; ``seed``
    unless it gives its own), named at ``at``. Each error is at the line of the key it is about."""
    params = params_node.plain() if params_node is not None else {}
    if params_node is not None and not isinstance(params, dict):
        raise params_node.error("expected a mapping of generator parameters")
    if params_node is not None:
        check_arguments(params_node, GENERATORS[name], params)
    params.setdefault("seed", seed)
    at = params_node or at
    try:
        return GENERATORS[name](**params)
    except TypeError as exc:
        raise at.error(f"bad parameters for {name}: {exc}") from None
    except InputError as exc:
        given = params_node.get(exc.key) if params_node is not None and exc.key else None
        if given is not None:
            raise given.error(exc.message) from None
        key = f"{at.key}.{exc.key}" if exc.key else at.key
        raise ConfigError(exc.message, source=at.source, line=at.line, key=key) from None


def read_source(node: Located, base: Path, seed: int, *, trace_key: str = "swf") -> Source:
    """The jobs of a section holding exactly one of ``trace_key`` (an SWF path relative to
    ``base``, with an optional ``limit``: its first N records) and ``generator`` (with optional
    ``params``, seeded by ``seed`` unless they give one). The section's other keys are its
    caller's to check."""
    trace_node, generator_node = node.get(trace_key), node.get("generator")
    if (trace_node is None) == (generator_node is None):
        raise node.error(f"give exactly one of {trace_key!r} (a trace) or 'generator'")
    if trace_node is not None:
        limit_node = node.get("limit")
        trace = read_trace(trace_node, base, as_int(limit_node, 1) if limit_node is not None else None)
        return Source(trace.replayable_jobs(), trace.skipped, trace)
    assert generator_node is not None
    jobs = generated(generator_name(generator_node), node.get("params"), seed, generator_node)
    return Source(jobs, [], None)
