"""How a notebook tool is declared (``notebook_tool``) and how tools reach the kernel's main
thread (``Dispatch``, ``run_here``): shared by ``notebook_tools.py`` and ``edits.py``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
Dispatch = Callable[[Callable[[], Any]], Awaitable[Any]]
CHANGES_STATE = "__pi_notebook_tool_changes_state__"  # on a declared method


async def run_here(fn: Callable[[], T]) -> T:
    return fn()


def notebook_tool(*, changes_state: bool = False) -> Callable[[F], F]:
    """Declare a ``NotebookTools`` method as a notebook tool. ``changes_state``: the tool goes
    through the approval policy and runs alone (sequential). ``NotebookTools.build`` turns the
    bound method into an ``AgentTool`` with ``@tool``: the signature is the schema, the
    docstring the description."""

    def mark(method: F) -> F:
        setattr(method, CHANGES_STATE, changes_state)
        return method

    return mark


def declared_tools(*classes: type) -> dict[str, bool]:
    """Tool name -> whether it changes state, in declaration order, over ``classes``."""
    return {
        name: getattr(member, CHANGES_STATE)
        for klass in classes
        for name, member in vars(klass).items()
        if hasattr(member, CHANGES_STATE)
    }
