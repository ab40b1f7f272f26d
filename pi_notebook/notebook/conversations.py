"""The kernel's conversations: one ``Agent`` per name, ``"default"`` unless ``--name`` says otherwise.

A conversation continues across ``%%pi`` cells until ``--new`` replaces it or ``%pi reset``
clears it. ``current(name)`` is the same object ``%%pi`` uses, so Python code can subscribe,
set hooks, add tools, steer or read ``state.messages``.

A new conversation takes its model, thinking level and system prompt from the defaults:
``c.PiMagics.*`` traitlets when the extension is loaded, else ``PI_NOTEBOOK_MODEL`` and the
built-in system prompt. Options given on a cell (``--model``, ``--thinking``, ``--system``)
change the conversation they run in and stay in effect for its later cells.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ai.entry import stream_simple
from ..ai.models import resolve_model as catalogue_resolve_model
from ..ai.types import Model

if TYPE_CHECKING:
    from ..agent import Agent

DEFAULT_NAME = "default"
MODEL_ENV = "PI_NOTEBOOK_MODEL"
DEFAULT_SYSTEM_PROMPT = (
    "You are Pi, an assistant working inside a Jupyter notebook. The user writes prompts in "
    "%%pi cells; the notebook's Python kernel is live. Use the notebook tools to look at "
    "variables, cells and the notebook before answering questions about them, and to run code "
    "when asked. Keep answers concise and use Markdown; put code in fenced blocks."
)


@dataclass(frozen=True, slots=True)
class Defaults:
    model: str = ""
    thinking: str = "off"
    system: str = DEFAULT_SYSTEM_PROMPT


def _env_defaults() -> Defaults:
    return Defaults(model=os.environ.get(MODEL_ENV, "").strip())


defaults_provider: Callable[[], Defaults] = _env_defaults
"""Set by the extension to read the ``PiMagics`` traitlets of the current shell."""

_agents: dict[str, Agent] = {}


def resolve_model(spec: str) -> Model:
    """``provider:id`` (or a unique bare id) -> a ``Model``; local servers such as
    ``ollama:llama3.2`` resolve without registration. Raises ``ValueError`` with a one-line reason."""
    try:
        return catalogue_resolve_model(spec)
    except KeyError as exc:  # ModelNotFoundError: its str() is already a clean sentence
        raise ValueError(str(exc.args[0]) if exc.args else f"unknown model {spec!r}") from None


def create(defaults: Defaults | None = None) -> Agent:
    """A fresh conversation configured from ``defaults`` (the current ones if omitted)."""
    from ..agent import Agent

    d = defaults or defaults_provider()
    state: dict[str, Any] = {"system_prompt": d.system, "thinking_level": d.thinking}
    if d.model:
        state["model"] = resolve_model(d.model)
    return Agent(stream_fn=stream_simple, initial_state=state)


def current(name: str | None = None) -> Agent:
    """The conversation ``name`` (default ``"default"``), created on first use."""
    key = name or DEFAULT_NAME
    agent = _agents.get(key)
    if agent is None:
        agent = _agents[key] = create()
    return agent


def new(name: str | None = None) -> Agent:
    """Replace conversation ``name`` by a fresh one (an active run of the old one is aborted)."""
    key = name or DEFAULT_NAME
    old = _agents.pop(key, None)
    if old is not None:
        old.abort()
    agent = _agents[key] = create()
    return agent


def names() -> list[str]:
    return list(_agents)


def clear() -> None:
    """Forget every conversation (aborting active runs); the next ``current()`` starts fresh."""
    for agent in _agents.values():
        agent.abort()
    _agents.clear()


def has_model(agent: Agent) -> bool:
    """False while the agent still has Pi's placeholder model (``unknown``)."""
    model = agent.state.model
    return bool(model and model.provider != "unknown" and model.api != "unknown")
