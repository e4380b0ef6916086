"""Lazy public names for a package's ``__init__``: each name is imported from its module the
first time it is read, so ``import ragkit`` (or ``ragkit.app``) costs nothing until a name is
used. The command line imports ``ragkit.cli`` through ``ragkit``; paying for the vector store
and the graph on every ``--help`` would cost seconds.

    __getattr__, __dir__ = exports(__name__, {"KnowledgeBase": "ragkit.store.kb", ...})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def exports(package: str, table: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` serving ``table`` (public name -> the module
    that defines it); a name once read is kept in the package's namespace."""

    def getattr_(name: str) -> object:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def dir_() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return getattr_, dir_
