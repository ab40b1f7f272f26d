"""Approvals that remember: "Allow for this conversation" on a tool card.

A grant lets later calls of one tool (or of every tool of one MCP server) run without a card,
for the rest of the conversation. It is kept on the conversation (``Conversation.grants``),
never by tool-call id, and only in this kernel: a resumed session file starts asking again,
since a grant is consent given to this kernel's run of the conversation. ``%pi approvals``
lists the grants and ``%pi approvals clear`` forgets them.

What a grant never covers: ``delete_cells`` and the other always-ask tools, a ``deny`` policy,
and any run where nobody can click (headless runs follow their own policy alone; the runner
gives their gate no grants).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # %load_ext imports this module: the agent loads with the first run
    from ...agent.types import AgentTool

GRANTED = "allowed for this conversation"
"""What the card of a call a grant let through says."""


def grant_scope(name: str, tool: AgentTool | Any | None) -> tuple[str, str]:
    """What a grant given on a call of ``name`` covers: ``("server", S)`` for a tool of the MCP
    server ``S`` (its tools are granted together), else ``("tool", name)``."""
    server = getattr(tool, "server_name", "")
    return ("server", server) if isinstance(server, str) and server else ("tool", name)


def offer_label(name: str, tool: AgentTool | Any | None) -> str:
    """The label of the card's third button."""
    kind, what = grant_scope(name, tool)
    if kind == "server":
        return f"Allow {what}'s tools for this conversation"
    return "Allow for this conversation"


@dataclass
class Grants:
    """The grants of one conversation: tool names and MCP server names."""

    tools: set[str] = field(default_factory=set)
    servers: set[str] = field(default_factory=set)

    def covers(self, name: str, tool: AgentTool | Any | None) -> bool:
        kind, what = grant_scope(name, tool)
        return what in (self.servers if kind == "server" else self.tools)

    def allow(self, name: str, tool: AgentTool | Any | None) -> None:
        kind, what = grant_scope(name, tool)
        (self.servers if kind == "server" else self.tools).add(what)

    def clear(self) -> int:
        """Forget every grant; how many there were."""
        count = len(self.tools) + len(self.servers)
        self.tools.clear()
        self.servers.clear()
        return count

    def lines(self) -> list[str]:
        """One line per grant, for ``%pi approvals``."""
        tools = [f"tool {name}: allowed for this conversation" for name in sorted(self.tools)]
        servers = [
            f"MCP server {name}: its tools allowed for this conversation" for name in sorted(self.servers)
        ]
        return tools + servers
