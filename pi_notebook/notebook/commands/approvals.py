"""``%pi approvals``: the grants "Allow for this conversation" gave in a conversation (which
tools, which MCP servers' tools run without a card), and ``%pi approvals clear`` to forget them.
The grants themselves are ``sessions/grants.py``'s; they live on the ``Conversation``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ..config import DEFAULT_NAME

if TYPE_CHECKING:
    from ..state import NotebookState


def approvals_command(state: NotebookState, name: str | None, rest: str) -> None:
    """List conversation ``name``'s grants, or forget them (``clear``)."""
    if rest not in ("", "clear"):
        raise UsageError(f"%pi approvals takes nothing or 'clear', not {rest!r}")
    label = name or DEFAULT_NAME
    found = state.conversations.find(name)
    if found is None:
        print(f"Conversation {label!r}: no grants (it has not started yet).")
        return
    grants = found.grants
    if rest == "clear":
        count = grants.clear()
        what = f"{count} grant{'s' if count != 1 else ''}" if count else "no grants"
        print(f"Conversation {label!r}: cleared {what}; its tools ask again.")
        return
    lines = grants.lines()
    if not lines:
        print(
            f"Conversation {label!r}: no grants; every call that needs approval asks. "
            "\"Allow for this conversation\" on a tool card adds one."
        )
        return
    print(f"Conversation {label!r} (delete_cells and always-ask tools still ask):")
    for line in lines:
        print(f"  {line}")
    print("%pi approvals clear forgets them.")


def grants_status(state: NotebookState, name: str | None) -> list[str]:
    """The ``%pi status`` line for conversation ``name``'s grants, when it has any."""
    found = state.conversations.find(name)
    if found is None or not (found.grants.tools or found.grants.servers):
        return []
    grants = found.grants
    names = sorted(grants.tools) + [f"{server}'s tools" for server in sorted(grants.servers)]
    return [f"granted: {', '.join(names)} (%pi approvals)"]
