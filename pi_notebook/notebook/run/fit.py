"""A prompt a small model's server can afford: what a ``%%pi`` run sends to a local or
small-window model.

A one-line prompt to a local model used to send every notebook tool's full schema and the
whole system prompt, about 2,000 tokens, which a CPU-only server spends most of a minute on
before the first word. For a model that is small (a context window of at most
``SMALL_WINDOW`` tokens, after the local server's own window was asked for) or served by a
local server (``llama.cpp:``, ``ollama:``, ``lmstudio:``, ``vllm:``), ``fit_run`` gives the
run, through its ``AgentRunOptions`` only (the conversation's agent is not changed):

* only the tools the run can use: not the tools that work on the live notebook document when
  the run is headless (nobody has a notebook open for them), nor the tools the approval policy
  blocks outright in this run (``deny``, or ``ask`` where nobody can click);
* compact schemas: each tool's first sentence as its description, each required parameter's
  first sentence, optional parameters as their type only, no titles, examples, defaults or
  bounds (the arguments are validated as before: only what is sent changes);
* a compact system prompt when the conversation has the default one (a prompt the user set
  is kept as it is).

A run without tools (``--tools none``) is left as it is: its prompt is about a hundred tokens;
so is a code-mode run (``--tool-mode code``, the model's ``toolMode``, or a server whose chat
template takes no tool calls: ``printed.py``), which sends no tool and a short prompt of its
own.

``run_options`` (``requests.py``) is what the cell's options make of the run before that. The
card says so in one line, with the tool count and the estimated size of the instructions
and schemas (Pi's four characters per token) before and after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ...agent import AgentRunOptions, AgentTool
from ...ai.local_probe import known_facts, tool_mode_of
from ...ai.models import LOCAL_SERVERS
from ...ai.types import Model, Tool
from ...runtime.estimate import payload_tokens
from ..config import DEFAULT_SYSTEM_PROMPT
from .requests import probe_local_server, run_options

__all__ = [
    "COMPACT_SYSTEM_PROMPT",
    "LIVE_DOCUMENT_TOOLS",
    "SMALL_WINDOW",
    "CompactTool",
    "compact_schema",
    "compact_tool",
    "fit_run",
    "is_small",
    "run_options",
    "trimmed_line",
    "usable",
]

SMALL_WINDOW = 16_384
"""A model with a context window this small or smaller gets the compact prompt."""
COMPACT_SYSTEM_PROMPT = (
    "You are Pi, an assistant in a Jupyter notebook with a live Python kernel. Use the tools "
    "to look at data and to run code; answer concisely."
)
LIVE_DOCUMENT_TOOLS = frozenset({"insert_cell", "insert_cells", "edit_cell", "delete_cells", "run_cell"})
"""Tools that change the open notebook document: a headless run has none to change."""
NO_NOTEBOOK = "no open notebook in a headless run"
BLOCKED = "this run's approval policy blocks them; --approve auto allows them"
DESCRIPTION_CHARS = 100
PARAMETER_CHARS = 80
_DROPPED_KEYS = frozenset({"title", "examples", "default", "minimum", "maximum"})
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def is_small(model: Model) -> bool:
    """Whether ``model`` gets the compact prompt (see the module docstring)."""
    return model.context_window <= SMALL_WINDOW or model.provider in LOCAL_SERVERS


def _first_sentence(text: str, limit: int) -> str:
    """The first sentence of ``text``; a longer one is cut at its last clause that fits."""
    first = _SENTENCE.split(" ".join(text.split()), maxsplit=1)[0]
    if len(first) <= limit:
        return first
    head = first[:limit]
    cut = max(head.rfind(mark) for mark in (", ", "; ", ": ", " ("))
    return (head[:cut] if cut > limit // 2 else head[: head.rfind(" ")]).rstrip(" ,;:") + "."


def compact_schema(schema: Any) -> Any:
    """``schema`` without titles, examples, defaults and bounds, each description cut to its
    first sentence; an optional property keeps only its type (a value or null: the value's)."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    required = set(schema.get("required") or ())
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED_KEYS:
            continue
        if key == "description" and isinstance(value, str):
            out[key] = _first_sentence(value, PARAMETER_CHARS)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {
                name: compact_schema(sub) if name in required else _bare(sub) for name, sub in value.items()
            }
        elif key == "$defs" and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = compact_schema(value)
    return out


def _bare(schema: Any) -> Any:
    """An optional property as its type only: ``{"type": ...}`` (a value-or-null: the value's)."""
    if not isinstance(schema, dict):
        return schema
    options = [o for o in schema.get("anyOf") or () if isinstance(o, dict) and o.get("type") != "null"]
    if len(options) == 1:
        schema = options[0]
    kept = {k: schema[k] for k in ("type", "enum", "items", "$ref") if k in schema}
    return compact_schema(kept) if kept else {}


@dataclass(kw_only=True)
class CompactTool(AgentTool):
    """A tool sent with a compact schema; its arguments are validated with its own."""

    sent_schema: dict[str, Any] = field(default_factory=dict)

    def json_schema(self) -> dict[str, Any]:
        return self.sent_schema


def compact_tool(tool: AgentTool) -> AgentTool:
    """``tool`` as a small model's request shows it (the same name, execution and checks)."""
    return CompactTool(
        name=tool.name,
        description=_first_sentence(tool.description, DESCRIPTION_CHARS),
        parameters=tool.parameters,
        execute=tool.execute,
        label=tool.label,
        prepare_arguments=tool.prepare_arguments,
        execution_mode=tool.execution_mode,
        requires_approval=tool.requires_approval,
        sent_schema=compact_schema(tool.json_schema()),
    )


def _sent(prompt: str, tools: list[AgentTool]) -> int:
    """Estimated tokens of the instructions and tool schemas every request carries."""
    defined = [_definition(t.to_tool()) for t in tools]
    return payload_tokens({"system": prompt, "tools": defined})


def _definition(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def _code_mode(runner: Any) -> bool:
    """Whether the run is in code mode (its tool mode, told what the server said)."""
    return bool(runner.printed.resolve() == "code")


def trimmed_line(tools: int, after: int, before: int, left_out: dict[str, list[str]] | None = None) -> str:
    """The card's line for a trimmed prompt; ``left_out``: why -> the tools not sent for it."""
    plural = "" if tools == 1 else "s"
    why = "".join(f" Not sent: {', '.join(names)} ({reason})." for reason, names in (left_out or {}).items())
    return (
        f"Prompt trimmed for a small context window: {tools} tool{plural}, ~{after:,} tokens of "
        f"instructions and tool schemas (~{before:,} in full).{why}"
    )


def usable(
    tools: list[AgentTool], *, headless: bool, blocked: frozenset[str]
) -> tuple[list[AgentTool], dict[str, list[str]]]:
    """The tools this run can use (see the module docstring), and why -> the others."""
    kept: list[AgentTool] = []
    left_out: dict[str, list[str]] = {}
    for t in tools:
        if headless and t.name in LIVE_DOCUMENT_TOOLS:
            left_out.setdefault(NO_NOTEBOOK, []).append(t.name)
        elif t.name in blocked:
            left_out.setdefault(BLOCKED, []).append(t.name)
        else:
            kept.append(t)
    return kept, left_out


async def fit_run(runner: Any, run: AgentRunOptions, model: Model | None) -> AgentRunOptions:
    """Ask a local server about its model (``probe_local_server``: the window; whether its
    template takes tool calls, which the run's tool mode weighs), then, for a small model in
    tools mode, ``run`` with only the tools it can use, compact schemas and a compact system
    prompt, and a line on the card saying so. ``runner`` is the cell's ``PiRun``: its session,
    plan, view and tool mode (``printed``, made before) are read, nothing of the agent is written; ``model``:
    the model the run starts with (a local server's is asked for its window first)."""
    if model is None:
        return run
    session = runner.session
    if model.provider in LOCAL_SERVERS and model.base_url:  # only a local server is asked
        await probe_local_server(session)
        model = session.model or model
        runner.printed.probed = tool_mode_of(known_facts(model))  # what the probe just heard
    if not is_small(model) or _code_mode(runner):  # code mode: no tool, a short prompt of its own
        return run
    tools = list(run.tools if run.tools is not None else session.state.tools)
    if not tools:  # no tools: a prompt of ~100 tokens
        return run
    plan = runner.plan
    own_prompt = session.state.system_prompt
    prompt = run.system_prompt if run.system_prompt is not None else own_prompt
    blocked = frozenset(plan.gated) if plan.approval.policy == "deny" else frozenset()
    can_use, left_out = usable(tools, headless=plan.mode.headless.headless, blocked=blocked)
    kept = [compact_tool(t) for t in can_use]
    short = COMPACT_SYSTEM_PROMPT if prompt == DEFAULT_SYSTEM_PROMPT else prompt
    before, after = _sent(prompt, tools), _sent(short, kept)
    if after >= before:
        return run
    runner.view.add_notice(trimmed_line(len(kept), after, before, left_out), "prompt-trimmed")
    return replace(run, tools=kept, system_prompt=short)
