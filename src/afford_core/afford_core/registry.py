"""Registries: things found by name (robots, tasks, skills, grasp samplers, mask sources ...).

One small class serves every registry of the stack, so each behaves the same way: a name is
registered once (a second registration under the same name by another object is an error, not
a silent override), an unknown name is a ``KeyError`` that lists the known ones, and an entry
with heavy imports (torch, robosuite) can be registered lazily as ``"package.module:attr"``,
imported on first use. Lazy entries are also how a lower package names an implementation that
lives above it without importing it (the import-layer contract, ``tests/test_import_layers.py``,
forbids the import itself).

    SKILLS: Registry[type[Skill]] = Registry("skill")

    @SKILLS.register("pour")
    class Pour(Skill): ...

    SKILLS.register_lazy("policy", "afford_policy.skill:PolicySkill")
    SKILLS.get("pour")        # -> Pour
    SKILLS.names()            # -> ["policy", "pour"]
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar, overload

T = TypeVar("T")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class Registry(Generic[T]):
    """Named entries of one kind; see the module docstring.

    Args:
        kind: What the entries are, for error messages (``"robot"``, ``"task"``).
        on_load: Called with ``(name, entry)`` when an entry is registered or a lazy entry is
            first imported; e.g. to stamp the name on a class or validate it.
    """

    def __init__(self, kind: str, on_load: Callable[[str, T], None] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._on_load = on_load

    # ---------------------------------------------------------------- registering
    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T) -> T: ...

    def register(self, name: str, entry: T | None = None) -> T | Callable[[T], T]:
        """Register ``entry`` under ``name``; without ``entry``, a decorator that does."""
        self._check_name(name)
        if entry is None:
            return lambda obj: self._add(name, obj)
        return self._add(name, entry)

    def register_lazy(self, name: str, target: str) -> None:
        """Register ``name`` as ``"package.module:attr"``, imported by the first :meth:`get`.

        The module may register the same object under the same name itself when imported (its
        decorator then replaces the string); otherwise ``attr`` is taken from it.
        """
        self._check_name(name)
        if not _TARGET.match(target):
            raise ValueError(f"lazy {self.kind} target must be 'package.module:attr', got {target!r}")
        known = self._entries.get(name)
        if known is not None and known != target:
            raise ValueError(f"{self.kind} {name!r} is already registered ({self._describe(known)})")
        self._entries[name] = target

    def _add(self, name: str, entry: T) -> T:
        known = self._entries.get(name)
        if known is not None and not isinstance(known, str) and known is not entry:
            raise ValueError(f"{self.kind} {name!r} is already registered ({self._describe(known)})")
        if isinstance(known, str) and known != _target_of(entry):
            raise ValueError(
                f"{self.kind} {name!r} is registered lazily as {known!r}, not {_target_of(entry)!r}"
            )
        if self._on_load is not None:
            self._on_load(name, entry)  # may refuse the entry: then nothing is registered
        self._entries[name] = entry
        return entry

    def _check_name(self, name: str) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"{self.kind} name must be lower-case letters, digits, '_', '-' or '.', got {name!r}"
            )

    @staticmethod
    def _describe(entry: object) -> str:
        return entry if isinstance(entry, str) else getattr(entry, "__qualname__", repr(entry))

    # ---------------------------------------------------------------- looking up
    def get(self, name: str) -> T:
        """The entry called ``name``, importing it first if it was registered lazily.

        Raises:
            KeyError: ``name`` is not registered; the message lists the known names.
        """
        try:
            entry = self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise KeyError(f"unknown {self.kind} {name!r}; known: {known}") from None
        if isinstance(entry, str):
            module_name, attr = entry.split(":", 1)
            module = importlib.import_module(module_name)
            loaded = self._entries[name]  # the module may have registered it on import
            if isinstance(loaded, str):
                obj = getattr(module, attr)
                if self._on_load is not None:
                    self._on_load(name, obj)  # refused: the name stays lazy, and raises again
                self._entries[name] = obj
                loaded = obj
            return loaded
        return entry

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        """(name, entry) for every entry, sorted by name; lazy entries are imported."""
        for name in self.names():
            yield name, self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"


def _target_of(entry: object) -> str:
    return f"{getattr(entry, '__module__', '?')}:{getattr(entry, '__qualname__', '?')}"
