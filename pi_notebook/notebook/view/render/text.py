"""Deterministic plain text of a ``ViewState`` (what nbval compares), and the formatting of
tool fields, statuses, the footer and the end line that the HTML and the live view share.

No ids, times, token counts or costs in ``render_text``: two runs of the same conversation
give the same bytes. Pure: no widget or IPython imports.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..reduce import FINAL_STATUSES, Footer, TextBlock, ThinkingBlock, ToolCard, UserItem, ViewState
from ..review import review_text
from ..state import PlanCard

__all__ = [
    "MAX_SHOWN",
    "activity",
    "args_text",
    "clip",
    "code_arg",
    "end_text",
    "fold_prompt",
    "footer_text",
    "format_args",
    "format_details",
    "queued_text",
    "render_text",
    "status_label",
    "user_label",
]

MAX_SHOWN = 20_000
"""Characters of one tool field (arguments, result, details) kept in an output; a notebook is
not the place for a 5 MB tool result, and the model already saw it."""

PROMPT_LINES = 8
"""Lines of a long prompt shown above its fold (the rest opens with a click)."""
PROMPT_CHARS = 800
"""Characters of a long prompt shown above its fold, at most."""
FOLD_AFTER = 2
"""A prompt is folded only when it is longer than twice what the fold would show: folding
away two lines saves nothing."""


def fold_prompt(prompt: str) -> tuple[str, str]:
    """A long prompt as the part shown and the part folded away (``""``: shown whole). The
    shown part ends at a line end when one is near: the first ``PROMPT_LINES`` lines, cut to
    ``PROMPT_CHARS`` characters. ``head + rest == prompt``: the fold hides, it never drops."""
    lines = prompt.count("\n") + 1
    if len(prompt) <= FOLD_AFTER * PROMPT_CHARS and lines <= FOLD_AFTER * PROMPT_LINES:
        return prompt, ""
    cut = len(prompt)
    end = -1
    for _ in range(PROMPT_LINES):
        end = prompt.find("\n", end + 1)
        if end == -1:
            break
        cut = end
    if cut > PROMPT_CHARS:
        line_end = prompt.rfind("\n", 0, PROMPT_CHARS)
        cut = line_end if line_end > PROMPT_CHARS // 2 else PROMPT_CHARS
    return prompt[:cut], prompt[cut:]


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _opaque(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            return to_dict()
        except Exception:  # a DataFrame's to_dict may need arguments; fall through
            pass
    text = repr(value)
    # Memory addresses would make the text differ between two identical runs.
    return f"<{type(value).__name__}>" if _ADDRESS.search(text) else text


def clip(text: str) -> str:
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}\n… ({len(text) - MAX_SHOWN} more characters)"


def _dumps(value: Any, indent: int | None) -> str:
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=_opaque)
    except (TypeError, ValueError):  # e.g. non-string keys that cannot be sorted
        return str(_opaque(value))


def format_args(card: ToolCard, *, indent: int | None = 2) -> str:
    """The arguments as shown to the user: the raw JSON as it streams, then the final object,
    on one line when it is short."""
    if card.args is None:
        return clip(card.args_text)
    compact = _dumps(card.args, None)
    return clip(compact if indent is None or len(compact) <= 80 else _dumps(card.args, indent))


CODE_ARGS = {"run_code": "code", "insert_cell": "code"}
"""Tools whose one argument is Python source, which a card shows as code rather than JSON."""
_PARTIAL_CODE = re.compile(r'\A\s*\{\s*"code"\s*:\s*"')


def code_arg(card: ToolCard) -> str | None:
    """The Python source a card shows as code: ``run_code``'s and ``insert_cell``'s ``code``
    (also while it streams), ``set_variable``'s ``name = expression``; None for anything else."""
    args = card.args
    if card.name == "set_variable" and isinstance(args, dict) and set(args) <= {"name", "expression"}:
        expression = args.get("expression")
        return f"{args.get('name', '?')} = {expression}" if isinstance(expression, str) else None
    key = CODE_ARGS.get(card.name)
    if key is None:
        return None
    if isinstance(args, dict):
        code = args.get(key)
        return code if set(args) == {key} and isinstance(code, str) else None
    return _partial_code(card.args_text) if args is None else None


def _partial_code(streamed: str) -> str | None:
    """The code so far of a streaming ``{"code": "...`` (the JSON string is not closed yet)."""
    match = _PARTIAL_CODE.match(streamed)
    if match is None:
        return None
    rest = streamed[match.end() :]
    for cut in range(6):  # an escape such as \u00e9 may be cut anywhere in its 6 characters
        try:
            text = json.loads('"' + rest[: len(rest) - cut] + '"')
        except ValueError:
            continue
        return text if isinstance(text, str) else None
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _block(label: str, text: str) -> str:
    """``label:`` and the lines of ``text`` indented under it; control characters other than
    tab and newline stay escaped, as JSON shows them (a terminal would act on them)."""
    body = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", clip(text).replace("\r\n", "\n"))
    body = body.rstrip("\n")
    return f"{label}:\n{_indent(body)}" if body.strip() else f"{label}: {json.dumps(text)}"


def _cell_blocks(cells: Any) -> list[str] | None:
    """``insert_cells``' cells as one block each, or None when they are not such cells."""
    if not isinstance(cells, list) or not all(
        isinstance(c, dict) and isinstance(c.get("source"), str) for c in cells
    ):
        return None
    return [_block(f"cells[{i}] ({c.get('cell_type', 'code')})", c["source"]) for i, c in enumerate(cells)]


def args_text(card: ToolCard) -> str:
    """The arguments as plain text, code as code: Python source (``code_arg``) as ``code:``
    and its lines; a multi-line string argument (``edit_cell``'s ``source``, ``old``, ``new``)
    or ``insert_cells``' cells as a labelled block of lines; the other arguments as one line
    of JSON (``args: {...}``). Lines, not JSON escapes, for consoles, Markdown exports and
    diffs; deterministic (sorted keys). Empty when there are no arguments yet."""
    code = code_arg(card)
    if code is not None:
        return _block("code", code)
    args = card.args
    if not isinstance(args, dict):
        raw = format_args(card, indent=None)
        return f"args: {raw}" if raw else ""
    inline: dict[str, Any] = {}
    blocks: list[str] = []
    for key in sorted(args, key=str):
        value = args[key]
        cells = _cell_blocks(value) if key == "cells" else None
        if cells:
            blocks.extend(cells)
        elif isinstance(value, str) and "\n" in value.rstrip("\n"):
            blocks.append(_block(str(key), value))
        else:
            inline[key] = value
    lines = [f"args: {clip(_dumps(inline, None))}"] if inline or not blocks else []
    return "\n".join([*lines, *blocks])


def format_details(details: Any, *, indent: int | None = 2) -> str:
    """The details as text; nothing for ``None`` or an empty container (Pi's error results
    carry ``details: {}``). The images and HTML under ``display`` are drawn by the HTML views,
    not written out (``render/rich.py``)."""
    if isinstance(details, dict) and "display" in details:
        details = {key: value for key, value in details.items() if key != "display"}
    if details is None or (isinstance(details, dict | list | tuple | str) and not details):
        return ""
    if isinstance(details, str):
        return clip(details)
    return clip(_dumps(details, indent))


_STATUS_LABEL = {
    "streaming": "writing arguments",
    "pending_approval": "awaiting approval",
    "running": "running",
    "done": "done",
    "error": "error",
    "denied": "denied",
}


def status_label(card: ToolCard) -> str:
    if card.status == "streaming" and card.args is not None:
        return "queued"
    return _STATUS_LABEL.get(card.status, card.status)


def footer_text(footer: Footer, activity: str = "") -> str:
    """Turns, tokens, cost, elapsed time, model, and, while the run is live, what it waits for."""
    turns = f"{footer.turns} turn" + ("" if footer.turns == 1 else "s")
    tokens = f"{footer.input_tokens:,} in / {footer.output_tokens:,} out tokens"
    if footer.estimated:  # the server did not say for every answer: the session estimated
        tokens += " (estimated)"
    if footer.cache_read_tokens or footer.cache_write_tokens:
        tokens += f" (cache {footer.cache_read_tokens:,} read / {footer.cache_write_tokens:,} write)"
    parts = [turns, tokens, f"${footer.cost:.4f}", f"{footer.elapsed:.1f} s"]
    if footer.model:
        parts.append(footer.model)
    if footer.tool_mode:
        parts.append(f"tool mode: {footer.tool_mode}")
    if activity:
        parts.append(activity)
    return " · ".join(parts)


def activity(state: ViewState) -> str:
    """What a running view waits for, for the footer: ``waiting for approval``, ``running
    list_variables``, ``waiting for the model`` (no output yet: a slow prompt, a server holding
    back tokens), ``writing`` (the model streams); empty once the run has ended."""
    if state.finished:
        return ""
    cards = [item for item in state.items if isinstance(item, ToolCard)]
    if any(card.status == "pending_approval" for card in cards):
        return "waiting for approval"
    running = list(dict.fromkeys(card.name or "a tool" for card in cards if card.status == "running"))
    if running:
        return "running " + ", ".join(running)
    return "writing" if state.streaming else "waiting for the model"


def end_text(state: ViewState) -> str:
    """One line on how the run ended, empty for a normal stop."""
    reason = state.stop_reason
    if reason == "aborted":
        return f"Aborted: {state.error_message or 'the run was stopped'}"
    if reason == "error" or state.error_message:
        return f"Error: {state.error_message or 'unknown error'}"
    if reason == "length":
        return "Stopped: the response hit the output token limit"
    return ""


def user_label(item: UserItem) -> str:
    return {"steer": "steer", "follow_up": "follow-up"}.get(item.origin, "message")


def queued_text(state: ViewState) -> str:
    return "\n".join(f"queued {user_label(UserItem(q.text, q.kind))}: {q.text}" for q in state.queued)


# --- plain text ------------------------------------------------------------------------------


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


def tool_notes(card: ToolCard) -> list[str]:
    """What the card's head says beside its status: read from the model's text, a repeat of
    an earlier call, a grant."""
    return [note for note in (card.recovered, card.same_as, card.granted) if note]


def _tool_text(card: ToolCard) -> str:
    notes = "".join(f" · {note}" for note in tool_notes(card))
    lines = [f"[tool] {card.name or '?'} ({status_label(card)}){notes}"]
    args = args_text(card)
    if args:
        lines.append(_indent(args))
    if card.content:
        lines.append(_indent(f"result: {clip(card.content)}"))
    details = format_details(card.details, indent=None)
    if details:
        lines.append(_indent(f"details: {details}"))
    if card.progress and card.status not in FINAL_STATUSES:
        lines.append(_indent(f"progress: {card.progress}"))
    elif card.progress:
        lines.append(_indent(card.progress))
    return "\n".join(lines)


def _bounded(text: str, limit: int | None) -> str:
    """``text`` cut at ``limit`` characters (``None``: whole), saying how much the HTML has."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters, shown in the HTML output)"


PLAN_MARKS = {"done": "[x]", "running": "[>]", "todo": "[ ]"}


def plan_rows(plan: PlanCard) -> list[tuple[str, int, str]]:
    """The plan's steps as (``done`` | ``running`` | ``todo``, number, text)."""
    rows = []
    for number, step in enumerate(plan.steps, 1):
        mark = "done" if number in plan.done else "running" if number == plan.current else "todo"
        rows.append((mark, number, step))
    return rows


def plan_title(plan: PlanCard) -> str:
    done = len(plan.done)
    edited = ", edited" if plan.edited else ""
    return f"Plan ({done} of {len(plan.steps)} steps done{edited})"


def plan_text(plan: PlanCard) -> str:
    """The plan as a checklist: ``[x]`` done, ``[>]`` running, ``[ ]`` to do."""
    lines = [plan_title(plan) + ":"]
    lines += [f"  {PLAN_MARKS[mark]} {n}. {step}" for mark, n, step in plan_rows(plan)]
    return "\n".join(lines)


def render_text(state: ViewState, max_block: int | None = None) -> str:
    """Deterministic plain text of the whole run: prompt, thinking, text, tool calls with their
    arguments, results and details, injected messages, how it ended and the notice.

    ``max_block``: the prompt, each answer and each thinking block cut at this many characters
    (the frozen output's ``text/plain`` beside an HTML copy that has them whole, so a long
    answer is not saved twice in the notebook); ``None`` keeps them whole."""
    prompt = _bounded(state.prompt, max_block)
    blocks: list[str] = [_indent(prompt, "> ")] if state.prompt else []
    if state.sent:
        blocks.append("[what the model received]\n" + _indent(_bounded(state.sent, max_block)))
    if state.plan is not None:
        blocks.append(plan_text(state.plan))
    for item in state.items:
        if isinstance(item, TextBlock):
            if item.text.strip():
                blocks.append(_bounded(item.text.strip("\n"), max_block))
        elif isinstance(item, ThinkingBlock):
            if item.text.strip():
                blocks.append("[thinking]\n" + _indent(_bounded(item.text.strip("\n"), max_block)))
        elif isinstance(item, ToolCard):
            blocks.append(_tool_text(item))
        else:
            blocks.append(_indent(item.text, f"> [{user_label(item)}] "))
    review = state.review if state.review is not None and state.review.actions != "buttons" else None
    for line in (queued_text(state), end_text(state), state.notice, review_text(review)):
        if line:
            blocks.append(line)
    return "\n\n".join(blocks) + "\n"
