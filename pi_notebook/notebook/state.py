"""``NotebookState``: everything ``pi_notebook`` keeps for one IPython shell.

One object per ``InteractiveShell`` (``state_for(shell)``) owns the conversations (one
``AgentSession`` per name, ``sessions/conversations.py``), the configured defaults (``PiConfig``, the
``PiMagics`` of a loaded extension), where session files go (``sessions/files.py``), the
notebook tools and the cell error log they read, how a run's approval policy is chosen, and the
MCP servers of the kernel (one ``McpManager``, created on first use: ``%pi mcp``,
``c.PiMagics.mcp_config``). It is also the place where a recorder of the conversations plugs in:
an observer added with ``observe`` hears when a conversation is created or reset, when a run
starts and ends, and every message a conversation ends (a ``message_end`` of its
``AgentSession``, whether the run came from ``%%pi`` or from Python code).

``%load_ext`` creates the state, so creating it is cheap: the agent layer, the notebook tools,
the session files and the approval machinery load when first used (the imports inside the
methods below), not at load.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .config import PiConfig, Policy
from .sessions.conversations import Conversations
from .sessions.observer import StateObserver
from .tools.cell_log import CellErrorLog
from .usage_log import UsageLog

if TYPE_CHECKING:
    from ..agent.types import AgentTool
    from ..ai.types import Model, UserMessage
    from ..mcp import McpManager
    from ..runtime import AgentSession
    from .defaults import Effective
    from .pi_extensions import NotebookExtensions
    from .resources import NotebookResources
    from .result import PiResult
    from .sessions.files import SessionFiles
    from .tools.notebook_tools import NotebookTools
    from .view.run_view import RunView

DrawRun = Callable[[str, "tuple[str, ...]"], "RunView | None"]
"""``NotebookState.draw_run``: (prompt, notices) -> the view of the run, or ``None``."""

SESSION_TRAITS = (
    "compact", "compact_reserve_tokens", "compact_keep_recent_tokens", "retries", "retry_base_delay",
    "timeout", "max_conversation_cost", "max_conversation_tokens",
)
"""The ``c.PiMagics`` traits of a conversation's ``AgentSessionSettings`` (``SessionFiles.settings``)
and of its budget."""

MCP_INSTALL = "MCP servers need the mcp SDK: pip install 'pi-notebook[mcp]'"

__all__ = ["NotebookState", "StateObserver", "state_for"]


class NotebookState:
    """The conversations, defaults, tools and approval setup of one shell."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.conversations = Conversations(self)
        """Every conversation of the shell (``conversations.py``): the only place one is made."""
        self.errors = CellErrorLog()
        if shell is not None:
            self.errors.watch(shell)  # display outputs of the cells before the first %%pi too
        self._tools: NotebookTools | None = None
        self._sessions: SessionFiles | None = None
        self.usage = UsageLog(shell)
        """Every run's tokens and cost, for ``%pi usage``."""
        self.observers: list[StateObserver] = [self.usage]
        self._config: PiConfig | None = None
        self._thinking_told: set[tuple[str, str, str]] = set()
        self._mcp: McpManager | None = None
        self._mcp_config_loaded = ""
        self.model_problem = ""
        """Why the last conversation created from the defaults has no model although Pi's
        ``settings.json`` names one (``""``: it does not, or it resolved)."""
        self._settings_told: set[str] = set()
        self._resources: NotebookResources | None = None
        self._extensions: NotebookExtensions | None = None
        self.draw_run: DrawRun | None = None
        """A host above this layer (the Pi kernel for a terminal frontend) may draw a run in place
        of the live widgets: called with the prompt and the notices of a run that would be live;
        the view it returns, or ``None`` for the widgets."""

    @property
    def tools(self) -> NotebookTools:
        """The notebook tools of this shell (``tools/notebook_tools.py``), created on first use."""
        if self._tools is None:
            from .tools.notebook_tools import NotebookTools

            self._tools = NotebookTools(self.shell, self.errors)
        return self._tools

    @property
    def sessions(self) -> SessionFiles:
        """Where the conversations' Pi session files go and how this notebook's are found
        (``sessions/files.py``), created on first use."""
        if self._sessions is None:
            from .sessions.files import SessionFiles

            self._sessions = SessionFiles(
                self.shell,
                lambda: self.config,
                resources=lambda: self.resources.loader(),  # noqa: PLW0108 - made on first use
            )
        return self._sessions

    @property
    def resources(self) -> NotebookResources:
        """Pi's context files, skills, templates and trust for the notebook's folder
        (``resources.py``), created on first use."""
        if self._resources is None:
            from .resources import NotebookResources

            self._resources = NotebookResources(lambda: self.config, self.sessions.folder)
        return self._resources

    def defaults(self) -> Effective:
        """What new conversations and runs start from (``defaults.py``), with the project's
        ``.pi/settings.json`` when the folder is trusted."""
        from .defaults import effective

        return effective(self.config, self.resources.trusted_project())

    @property
    def extensions(self) -> NotebookExtensions:
        """Pi's extensions in this kernel (``pi_extensions.py``), created on first use."""
        if self._extensions is None:
            from .pi_extensions import NotebookExtensions

            self._extensions = NotebookExtensions(
                lambda: self.resources.folder, project_trusted=lambda _: self.resources.current().trusted
            )
        return self._extensions

    # --- configuration ---------------------------------------------------------------------------

    @property
    def config(self) -> PiConfig:
        """The ``PiMagics`` of the loaded extension, else a ``PiConfig`` reading the same section."""
        if self._config is None:
            parent = self.shell if self.shell is not None and hasattr(self.shell, "config") else None
            self.config = PiConfig(parent=parent)
        return self._config  # type: ignore[return-value]

    @config.setter
    def config(self, config: PiConfig) -> None:
        self._config = config
        # the conversations' retry, compaction and timeout settings follow the traits at once
        # (a prompt from Python too), not only at the next cell
        config.observe(lambda _: self.conversations.configure(), names=list(SESSION_TRAITS))

    # --- conversations ----------------------------------------------------------------------------

    def names(self) -> list[str]:
        return self.conversations.names()

    def forget_conversations(self) -> None:
        """What ``Conversations.clear`` leaves behind: the notices already given, the
        recordings already looked for."""
        self._thinking_told.clear()
        if self._sessions is not None:
            self._sessions.looked_up.clear()

    def thinking_told_forget(self, name: str) -> None:
        """A new conversation ``name``: its thinking notices may be given again."""
        self._thinking_told = {key for key in self._thinking_told if key[0] != name}

    # --- runs -----------------------------------------------------------------------------------

    def observe(self, observer: StateObserver) -> Callable[[], None]:
        """Add ``observer``; returns a function that removes it."""
        self.observers.append(observer)
        return lambda: self.observers.remove(observer) if observer in self.observers else None

    def run_started(self, name: str, session: AgentSession, prompt: UserMessage) -> None:
        for observer in self.observers:
            observer.run_started(name, session, prompt)

    def run_ended(self, name: str, session: AgentSession, result: PiResult) -> None:
        for observer in self.observers:
            observer.run_ended(name, session, result)

    def settings_notices(self, problems: Iterable[str]) -> list[str]:
        """The problems of Pi's ``settings.json`` not yet shown in this shell (each once)."""
        fresh = [line for line in problems if line not in self._settings_told]
        self._settings_told.update(fresh)
        return fresh

    def thinking_ignored(self, name: str, model: Model, level: str) -> str | None:
        """One line when thinking ``level`` has no effect because the conversation's ``model``
        does not reason; said once per conversation, model and level."""
        if level == "off" or model.reasoning:
            return None
        key = (name, f"{model.provider}:{model.id}", str(level))
        if key in self._thinking_told:
            return None
        self._thinking_told.add(key)
        return f"--thinking {level} is ignored: {key[1]} does not support reasoning."

    # --- approvals ------------------------------------------------------------------------------

    def approvals(self) -> dict[str, Policy]:
        """The per-tool policy map (``c.PiMagics.approvals``)."""
        return dict(self.config.approvals)

    # --- MCP servers --------------------------------------------------------------------------------

    @property
    def mcp(self) -> McpManager:
        """This kernel's MCP servers; ``RuntimeError`` without the SDK. It is the process's
        ``pi_notebook.mcp.default_manager()``, so a server started from Python with
        ``mcp.connect(...)`` is the same server ``%pi mcp`` lists and ``%%pi`` runs use."""
        if self._mcp is None:
            try:
                from ..mcp import default_manager
            except ImportError:
                raise RuntimeError(MCP_INSTALL) from None
            self._mcp = default_manager()
        return self._mcp

    @property
    def has_mcp(self) -> bool:
        """Whether the MCP manager exists (without creating it)."""
        return self._mcp is not None

    def load_mcp_config(self) -> list[str]:
        """Start the servers of ``c.PiMagics.mcp_config`` (once per path; returns at once with
        the names started). Raises ``ValueError`` / ``RuntimeError`` with a one-line reason."""
        path = self.config.mcp_config.strip()
        if not path or path == self._mcp_config_loaded:
            return []
        servers = self.mcp.add_config(path)
        self._mcp_config_loaded = path
        return [server.name for server in servers]

    async def mcp_tools(self) -> list[AgentTool]:
        """The tools of the ready MCP servers, after waiting for those still connecting (a
        server that fails is left out; ``%pi mcp list`` says why)."""
        manager = self._mcp
        if manager is None:
            return []
        pending = [manager.get(n).ready() for n in manager.names() if manager.get(n).state == "connecting"]
        if pending:
            import asyncio  # a kernel has it loaded; a bare shell need not load it at %load_ext

            await asyncio.gather(*pending, return_exceptions=True)
        return list(manager.tools())

    def mcp_tools_blocking(self) -> list[AgentTool]:
        """``mcp_tools`` for a thread that may block (the ``%%pi`` cell-magic fallback)."""
        manager = self._mcp
        if manager is None:
            return []
        for name in manager.names():
            server = manager.get(name)
            if server.state == "connecting":
                with contextlib.suppress(Exception):  # a server that fails is left out, as above
                    server.wait()
        return list(manager.tools())

    def mcp_tool_names(self) -> list[str]:
        """The names of the ready MCP servers' tools now (no waiting, no manager created)."""
        return [tool.name for tool in self._mcp.tools()] if self._mcp is not None else []

    def close_mcp(self) -> None:
        """Stop every MCP server of this kernel (their processes too)."""
        manager, self._mcp, self._mcp_config_loaded = self._mcp, None, ""
        if manager is not None:
            manager.shutdown()


_states: weakref.WeakKeyDictionary[Any, NotebookState] = weakref.WeakKeyDictionary()
_without_shell: NotebookState | None = None


def state_for(shell: Any = None) -> NotebookState:
    """The ``NotebookState`` of ``shell`` (default: the running IPython, if any), created on
    first use. Outside IPython there is one process-wide state without a shell."""
    global _without_shell
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        if _without_shell is None:
            _without_shell = NotebookState(None)
        return _without_shell
    found = _states.get(shell)
    if found is None:
        found = _states[shell] = NotebookState(shell)
    return found
