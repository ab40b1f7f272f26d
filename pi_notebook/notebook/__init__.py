"""``pi_notebook.notebook``: the Jupyter layer, the only one that imports IPython, ipykernel and
ipywidgets.

* ``view``: the pure reducer ``AgentEvent -> ViewState`` (no widget imports).
* ``render`` (``text``, ``static_html``, ``markdown``): deterministic ``text/plain``, static
  ``text/html`` and Markdown for the frontend, all from a ``ViewState``.
* ``widgets`` (+ ``widgets_cards``): ``LiveView``, the live ipywidgets output with coalesced
  updates and Stop / Approve / Deny / steering controls; ``run_view``: the ``RunView`` protocol
  the runner draws into, and ``StaticView``.
* ``state``: ``NotebookState``, one per shell: conversations, defaults, notebook tools, cell
  error log, approval setup, the kernel's MCP servers, and the observer hooks a conversation
  recorder plugs into.
* ``config`` (``PiConfig``, the ``%%pi`` parser, the policy names), ``options`` (the options
  of one cell), ``magics`` (``PiMagics``: ``%%pi`` fallback and ``%pi``), ``commands`` (the
  ``%pi`` subcommands), ``runner`` (one run), ``extension`` (``%load_ext``), ``approval`` (the
  gate, ``ask_approval`` for user hooks), ``mcp_magic`` (``%pi mcp``), ``interrupts`` (SIGINT
  and the fallback's main-thread bridge), ``tools``, ``cells`` and ``cell_log`` (the notebook
  tools and what they read), ``references`` (bounded, secret-safe summaries), ``result``
  (``PiResult``), ``conversations`` (the functions behind ``pi_notebook.current()``),
  ``faux_stand_in``.

Importing this package imports nothing heavy: the names of ``__all__`` load their module on
first access. ``%load_ext`` loads only ``extension``, ``magics``, ``config``, ``state``,
``cell_log`` and ``kernel_compat`` (and what they import: IPython, traitlets); the agent,
pydantic, httpx, ipywidgets and the renderers load with the first ``%%pi`` or ``%pi``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .approval import ask_approval
    from .config import PiConfig
    from .errors import RunFailed
    from .extension import load_ipython_extension, unload_ipython_extension
    from .magics import PiMagics
    from .observer import StateObserver
    from .render import render_html, render_text
    from .result import PiResult
    from .run_view import RunView, StaticView
    from .runner import run_pi, run_pi_sync
    from .state import NotebookState, state_for
    from .widgets import LiveView

_HOMES = {
    "LiveView": "widgets",
    "NotebookState": "state",
    "PiConfig": "config",
    "PiMagics": "magics",
    "PiResult": "result",
    "RunFailed": "errors",
    "RunView": "run_view",
    "StateObserver": "observer",
    "StaticView": "run_view",
    "ask_approval": "approval",
    "load_ipython_extension": "extension",
    "render_html": "render",
    "render_text": "render",
    "run_pi": "runner",
    "run_pi_sync": "runner",
    "state_for": "state",
    "unload_ipython_extension": "extension",
}
__all__ = [
    "LiveView",
    "NotebookState",
    "PiConfig",
    "PiMagics",
    "PiResult",
    "RunFailed",
    "RunView",
    "StateObserver",
    "StaticView",
    "ask_approval",
    "load_ipython_extension",
    "render_html",
    "render_text",
    "run_pi",
    "run_pi_sync",
    "state_for",
    "unload_ipython_extension",
]


__getattr__, __dir__ = exports(__name__, _HOMES, __all__)
