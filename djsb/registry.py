"""Named plugins that register themselves, found by importing every module of their package.

A plugin file decorates its class or function with ``REGISTRY.register("name", "alias", ...)``;
the registry imports every module of its package the first time it is asked for a name, so adding
a plugin is adding one file: there is no list of plugins to keep up to date anywhere else.
"""

from __future__ import annotations

import importlib
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

    def __init__(self, kind: str, package: str) -> None:
        self.kind = kind
        self.package = package
        self.entries: dict[str, T] = {}
        self.aliases: dict[str, str] = {}
        self.discovered = False

    def register(self, name: str, *aliases: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name`` and its ``aliases``."""

        def decorate(entry: T) -> T:
            key = name.lower()
            if key in self.entries or key in self.aliases:
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
