"""pi_notebook: the Pi agent core in Python, running inside the Jupyter kernel.

Layers (imports go one way only): ``ai`` <- ``agent`` <- ``session`` / ``mcp`` <- ``runtime``
(``AgentSession``) <- ``notebook`` (see ``docs/design.md``). Importing this package does not import
IPython; the extension hooks and ``current`` load the notebook layer on first use, and
``AgentSession`` loads ``pi_notebook.runtime`` on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["AgentSession", "__version__", "current", "load_ipython_extension", "unload_ipython_extension"]

from ._lazy import exports

if TYPE_CHECKING:
    from .runtime import AgentSession


__getattr__, __dir__ = exports(__name__, {"AgentSession": "runtime.agent_session"}, __all__)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext pi_notebook``: register the ``%%pi`` transformer and magics."""
    from .notebook.load import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext pi_notebook``: remove what ``load_ipython_extension`` registered."""
    from .notebook.load import unload_ipython_extension as _unload

    _unload(ipython)


def current(name: str | None = None) -> AgentSession:
    """The kernel's conversation ``name`` used by ``%%pi`` (created on first use): its
    ``AgentSession`` (``await current().prompt(...)`` retries, compacts and records as a cell
    does; the ``Agent`` is ``current().agent``)."""
    from .notebook.conversations import current as _current

    return _current(name)
