"""The data of the view model of one ``%%pi`` run: ``ViewState`` and its items (text and
thinking blocks, tool cards, user messages, the footer, queued messages).

``reduce.py`` owns the reducer that fills these in from agent events and re-exports every name
here; the renderers and the live adapter read them. Plain dataclasses, no behaviour beyond
small accessors, no widget, IPython or Markdown imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

__all__ = [
    "FINAL_STATUSES",
    "NOT_EXECUTED",
    "PLAN_STEP_TOOL",
    "Footer",
    "Item",
    "Notice",
    "PlanCard",
    "QueueKind",
    "QueuedMessage",
    "RetryNote",
    "Review",
    "ReviewActions",
    "TextBlock",
    "ThinkingBlock",
    "ToolCard",
    "ToolStatus",
    "UserItem",
    "UserOrigin",
    "ViewState",
]

ToolStatus: TypeAlias = Literal["streaming", "pending_approval", "running", "done", "error", "denied"]
FINAL_STATUSES: frozenset[str] = frozenset({"done", "error", "denied"})
UserOrigin: TypeAlias = Literal["prompt", "steer", "follow_up", "injected"]
QueueKind: TypeAlias = Literal["steer", "follow_up"]

NOT_EXECUTED = "not executed: the run ended first"
ReviewActions: TypeAlias = Literal["buttons", "command", "none"]
PLAN_STEP_TOOL = "plan_step"
"""The tool a ``--plan`` run's agent calls to say which step it starts or has done."""


class _Streamed:
    """Text that arrives in pieces. Appending is O(len(piece)); ``text`` joins lazily and caches,
    so a renderer reading it 20 times a second pays one join per frame, not one per token."""

    __slots__ = ("_parts", "done", "rev")

    def __init__(self, text: str = "", *, done: bool = False) -> None:
        self._parts: list[str] = [text] if text else []
        self.done = done
        self.rev = 0

    @property
    def text(self) -> str:
        parts = self._parts
        if len(parts) > 1:
            joined = "".join(parts)
            self._parts = [joined]
            return joined
        return parts[0] if parts else ""

    def append(self, piece: str) -> None:
        self._parts.append(piece)
        self.rev += 1

    def set(self, text: str) -> None:
        self._parts = [text] if text else []
        self.rev += 1

    def __repr__(self) -> str:
        return f"{type(self).__name__}(text={self.text!r}, done={self.done})"


class TextBlock(_Streamed):
    """Assistant text, as Markdown source."""

    __slots__ = ()
    kind: Literal["text"] = "text"


class ThinkingBlock(_Streamed):
    """Model reasoning (shown collapsed). ``redacted`` means the text is a placeholder."""

    __slots__ = ("redacted",)
    kind: Literal["thinking"] = "thinking"

    def __init__(self, text: str = "", *, done: bool = False, redacted: bool = False) -> None:
        super().__init__(text, done=done)
        self.redacted = redacted


@dataclass(eq=False)
class ToolCard:
    """One tool call, from its first streamed argument byte to its result.

    ``content`` is what the model saw (the result's text blocks); ``details`` is what it did not
    (the result's ``details``, for the user only). ``args`` is the final argument object once the
    call is complete; until then ``args_text`` holds the raw JSON streamed so far."""

    tool_call_id: str
    name: str
    status: ToolStatus = "streaming"
    args: Any = None
    progress: str = ""
    content: str = ""
    details: Any = None
    is_error: bool = False
    same_as: str = ""
    """An identical earlier call of the run and how it ended: "same as call 2, which failed"."""
    granted: str = ""
    recovered: str = ""
    """The model printed this call in its text and it was read from there ("recovered from the
    model's text"), "": the model called the tool."""
    """Why it ran without asking: "allowed for this conversation" (a grant)."""
    grant_offer: str = ""
    """The "Allow for this conversation" button's label while it waits ("": not offered)."""
    unanswered: bool = False
    """It still waited for a click when the run ended (Stop, an interrupt): nobody decided."""
    rev: int = 0
    kind: Literal["tool"] = field(default="tool", init=False)
    _args_parts: list[str] = field(default_factory=list, repr=False)

    @property
    def args_text(self) -> str:
        parts = self._args_parts
        if len(parts) > 1:
            self._args_parts = ["".join(parts)]
        return self._args_parts[0] if self._args_parts else ""

    def append_args(self, piece: str) -> None:
        self._args_parts.append(piece)
        self.rev += 1


@dataclass(eq=False)
class UserItem:
    """A user message injected during the run: steering or a follow-up (the prompt itself is
    ``ViewState.prompt``). ``origin`` is known when the message was queued through this view."""

    text: str
    origin: UserOrigin = "injected"
    rev: int = 0
    kind: Literal["user"] = field(default="user", init=False)


Item: TypeAlias = TextBlock | ThinkingBlock | ToolCard | UserItem


@dataclass
class Footer:
    turns: int = 0
    """Turns of the agent loop; a retried model call is the same turn."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    """USD, summed over the run's assistant messages (failed, stopped and retried calls too:
    their tokens were spent), the streaming message's usage so far included."""
    estimated: bool = False
    """Some of the tokens are the session's estimate (a stopped or failed answer, a server that
    reported no usage): the footer says so."""
    elapsed: float = 0.0
    """Seconds. Set by the live adapter from its clock; otherwise derived from message timestamps."""
    model: str = ""
    tool_mode: str = ""
    """How the model ran tools when not through the API ("code": Python in fenced blocks)."""


@dataclass
class QueuedMessage:
    kind: QueueKind
    text: str


@dataclass
class Notice:
    """One line under the run. ``key`` names what it is about (the approval policy, a retry, a
    compaction, how the run stopped), so a later line on the same thing replaces it in place and
    every other line stays."""

    key: str
    text: str


@dataclass
class PlanCard:
    """The plan a ``--plan`` run executes: its numbered steps, the step the agent said it is on
    and the steps it said are done (through the ``plan_step`` tool, ``run/planning.py``)."""

    steps: list[str]
    current: int | None = None
    """1-based; the step the agent reported starting last."""
    done: set[int] = field(default_factory=set)
    edited: bool = False
    """The user changed the plan (Edit) before running it."""


@dataclass
class Review:
    """What the run changed in the live notebook, one line per change (``view/review.py`` draws
    it, ``run/review.py`` fills it in), and what became of it: ``open`` until Accept all
    (``accepted``) or Undo all (``undone``); ``told`` says what that did, line by line."""

    heading: str
    lines: list[str]
    actions: ReviewActions
    """``buttons``: Accept all / Undo all under the run; ``command``: nobody can click, a line
    names ``%pi undo``; ``none``: headless, the summary alone."""
    waiting: int = 0
    """Edits the agent proposed that were neither applied nor rejected (the run ended first)."""
    outcome: Literal["open", "accepted", "undone"] = "open"
    told: list[str] = field(default_factory=list)
    rev: int = 0


@dataclass
class RetryNote:
    """The retry the view is showing: which attempt of how many, after which error."""

    attempt: int
    max_attempts: int
    error: str
    waiting: bool = True


@dataclass(eq=False)
class ViewState:
    prompt: str = ""
    sent: str = ""
    """What the model received as the run's first message, when it differs from ``prompt`` as
    typed: a ``/template``'s expansion, the values `` $`...` `` references attached (empty when
    the prompt went as typed)."""
    items: list[Item] = field(default_factory=list)
    footer: Footer = field(default_factory=Footer)
    stop_reason: str | None = None
    error_message: str | None = None
    notices: list[Notice] = field(default_factory=list)
    finished: bool = False
    streaming: bool = False
    """The model has sent part of its current message (until that message ends)."""
    queued: list[QueuedMessage] = field(default_factory=list)
    """Messages sent through this view's Send/Queue that the agent has not injected yet."""
    plan: PlanCard | None = None
    """The plan this run executes (``%%pi --plan`` after Run plan), shown as a checklist."""
    review: Review | None = None
    """What the run changed in the notebook (``None``: nothing), drawn at the end."""
    rev: int = 0
    # Bookkeeping of the reducer, not part of what is drawn.
    _blocks: dict[int, Item] = field(default_factory=dict, repr=False)
    _cards: dict[str, ToolCard] = field(default_factory=dict, repr=False)
    _prompt_seen: bool = field(default=False, repr=False)
    _first_ts: int | None = field(default=None, repr=False)
    _last_ts: int | None = field(default=None, repr=False)
    _clock_elapsed: bool = field(default=False, repr=False)
    _retry: RetryNote | None = field(default=None, repr=False)
    _compactions: int = field(default=0, repr=False)
    _retried_call: bool = field(default=False, repr=False)
    """A retry was announced: the next ``turn_start`` repeats a turn, it is not a new one."""
    _live_usage: tuple[int, int, int, int, float] = field(default=(0, 0, 0, 0, 0.0), repr=False)
    """The usage of the streaming message already added to the footer (input, output, cache
    read, cache write, cost); replaced by the message's final usage at its end."""

    def tool_card(self, tool_call_id: str) -> ToolCard | None:
        return self._cards.get(tool_call_id)

    @property
    def notice(self) -> str:
        """The notice lines as the renderers show them, in the order they were added."""
        return "\n".join(n.text for n in self.notices if n.text)
