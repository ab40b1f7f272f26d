"""Lazy package exports: a package's public names load their module on first access.

A package lists ``name -> submodule`` and binds the two functions :func:`exports` returns as its
module-level ``__getattr__`` and ``__dir__`` (PEP 562); its ``TYPE_CHECKING`` block holds the
same imports for type checkers. Importing the package then costs nothing beyond its own file,
and ``from package import name`` or ``package.name`` import the one module that defines it. A
submodule name (``pi_notebook.ai.faux``) resolves as after ``import package.submodule``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, homes: Mapping[str, str], names: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose ``names`` live in ``homes[name]``."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            if not name.startswith("__"):
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
