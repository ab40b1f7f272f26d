"""``pi_notebook.notebook``: the Jupyter layer, the only one that imports IPython, ipykernel and
ipywidgets.

Top level, the extension and what every part reads:

* ``load`` (``%load_ext``: the ``%%pi`` input transformer), ``magics`` (``PiMagics``: the
  ``%%pi`` fallback and ``%pi``), ``config`` (``PiConfig``, the ``%%pi`` parser, the policy
  names), ``options`` (the options of one cell), ``defaults`` (the settings in force:
  ``c.PiMagics`` over Pi's ``settings.json``), ``state`` (``NotebookState``, one per shell:
  its conversations, defaults, notebook tools, cell error log, approval setup, the kernel's MCP
  servers), ``result`` (``PiResult``), ``conversations`` (the functions behind
  ``pi_notebook.current()``), ``resources`` (Pi's context files, skills and templates of the
  folder), ``error_actions`` (what a failing cell shows under its traceback),
  ``pi_extensions`` (``NotebookExtensions``: Pi's extensions in the kernel, loaded on first
  use), ``usage_log`` (every run's tokens and cost).

Sub-packages, by concern:

* ``commands/``: the ``%pi`` subcommands (``conversation``, ``mcp``, ``sessions``,
  ``extensions``: ``%pi extension ...`` and the commands extensions register).
* ``run/``: one cell's run: ``context`` (the cell's surroundings, worked out once), ``plan``
  (the cell planned as a value), ``runner`` (the plan run through the conversation's
  ``AgentSession``), ``approval`` (the gate, ``ask_approval`` for user hooks, the run mode),
  ``extension_ui`` (``CellUI``: an extension's ``ctx.ui`` in the cell, or the headless
  answers), ``requests`` (the run's ``AgentRunOptions``), ``errors``, ``faux_stand_in`` (the
  offline model when none is configured), ``error_help`` + ``error_buttons`` (``%pi fix`` /
  ``%pi explain`` and the Explain / Fix buttons under a failing cell).
* ``host/``: every ipykernel / IPython wrapper, what depends on the ipykernel version:
  ``compat``, ``headless`` (can anybody click in this run), ``interrupts`` (SIGINT and the
  fallback's main-thread bridge), ``pages``, ``queued``. (``pi_notebook.kernel`` is the Pi
  kernel, another thing.)
* ``view/``: ``reduce``, the pure reducer of agent and session events into a ``ViewState``
  (``state``, ``notices``), with no widget imports; ``render/`` (``text``, ``static_html``,
  ``markdown``): deterministic ``text/plain``, static ``text/html`` and Markdown from a
  ``ViewState``; ``live`` (+
  ``parts``): ``LiveView``, the live ipywidgets output with coalesced updates and Stop /
  Approve / Deny / steering controls; ``run_view``: the ``RunView`` protocol the runner draws
  into, and ``StaticView``; ``dialogs``: the widgets of an extension's question.
* ``tools/``: the notebook tools (``notebook_tools``) and what they read: ``cells``,
  ``cell_log``, ``outputs``, ``references`` (bounded, secret-safe summaries) and ``summaries/``
  (one module a data library).
* ``sessions/``: the conversations and their Pi session files: ``conversations`` (the registry
  of ``AgentSession``s), ``files`` (where they record, this notebook's recordings),
  ``observer``, ``replay``.

The sub-packages import the top level and each other without a cycle (``commands`` ->
``run`` -> ``sessions``, ``tools``, ``view``, ``host``); their ``__init__`` files import
nothing. Importing this package imports nothing heavy either: the names of ``__all__`` load
their module on first access. ``%load_ext`` loads only ``load``, ``magics``, ``config``,
``state``, ``tools.cell_log`` and ``host.compat`` (and what they import: IPython,
traitlets, ``tools.references``); the agent, pydantic, httpx, ipywidgets and the renderers load
with the first ``%%pi`` or ``%pi``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .config import PiConfig
    from .load import load_ipython_extension, unload_ipython_extension
    from .magics import PiMagics
    from .result import PiResult
    from .run.approval import ask_approval
    from .run.cell import run_pi, run_pi_sync
    from .run.errors import RunFailed
    from .sessions.observer import StateObserver
    from .state import NotebookState, state_for
    from .view.live import LiveView
    from .view.render import render_html, render_text
    from .view.run_view import RunView, StaticView

_HOMES = {
    "LiveView": "view.live",
    "NotebookState": "state",
    "PiConfig": "config",
    "PiMagics": "magics",
    "PiResult": "result",
    "RunFailed": "run.errors",
    "RunView": "view.run_view",
    "StateObserver": "sessions.observer",
    "StaticView": "view.run_view",
    "ask_approval": "run.approval",
    "load_ipython_extension": "load",
    "render_html": "view.render",
    "render_text": "view.render",
    "run_pi": "run.cell",
    "run_pi_sync": "run.cell",
    "state_for": "state",
    "unload_ipython_extension": "load",
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
