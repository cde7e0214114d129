"""Named plugins that register themselves, found by importing every module of their package.

A plugin file decorates its class or function with ``REGISTRY.register("name", "alias", ...)``;
the registry imports every module of its package the first time it is asked for a name, so adding
a plugin is adding one file: there is no list of plugins to keep up to date anywhere else. An
installed package can add plugins through the registry's entry point group, if it has one.
One class serves every kind of plugin: job modules, scenarios, priority plugins and presets,
backfill policies.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import pkgutil
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(ValueError):
    """A name no plugin registered; ``choices`` are the registered names (aliases left out)."""

    def __init__(self, kind: str, name: str, choices: tuple[str, ...]) -> None:
        super().__init__(f"unknown {kind} {name!r} (choose from {', '.join(choices)})")
        self.kind = kind
        self.name = name
        self.choices = choices


class Registry(Generic[T]):
    """Plugins of one kind by name, with aliases; names are matched case-insensitively."""

    def __init__(self, kind: str, package: str, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self.package = package
        self.entry_point_group = entry_point_group
        self.entries: dict[str, T] = {}
        self.aliases: dict[str, str] = {}
        self.discovered = False

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` and its ``aliases``."""

        def decorate(entry: T) -> T:
            key = name.lower()
            known = self.entries.get(key)
            if known is not None and _same_source(known, entry):
                return entry  # the same file imported again (e.g. loaded by path): keep the first
            if known is not None or key in self.aliases:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self.entries[key] = entry
            for alias in aliases:
                self.aliases[alias.lower()] = key
            return entry

        return decorate

    def discover(self) -> None:
        """Import every module of the package once, so that each registers its plugins."""
        if self.discovered:
            return
        self.discovered = True
        package = importlib.import_module(self.package)
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{self.package}.{module.name}")
        if self.entry_point_group is not None:
            for entry in importlib.metadata.entry_points(group=self.entry_point_group):
                self.register(entry.name)(entry.load())

    def canonical(self, name: str) -> str:
        """The registered name that ``name`` (or an alias of it) stands for; UnknownName if none."""
        self.discover()
        key = name.strip().lower()
        key = self.aliases.get(key, key)
        if key not in self.entries:
            raise UnknownName(self.kind, name, self.names())
        return key

    def get(self, name: str) -> T:
        """The plugin registered as ``name`` or one of its aliases."""
        return self.entries[self.canonical(name)]

    def names(self) -> tuple[str, ...]:
        """Every registered name (without aliases), in registration order."""
        self.discover()
        return tuple(self.entries)


def _same_source(known: object, entry: object) -> bool:
    """Two registrations of what the same source file defines (a class or function)."""
    try:
        return inspect.getfile(known) == inspect.getfile(entry)  # type: ignore[arg-type]
    except TypeError:
        return False
