"""Approval policy for tools that change state, the per-tool policy map, the gate that applies
them, ``ask_approval`` for user hooks, and headless detection.

Policies: ``ask`` (Approve / Deny buttons on the tool card), ``auto`` (run without asking),
``deny`` (block; the model gets a tool result saying why). Which policy a tool call gets,
first match wins:

1. an entry for the tool in ``c.PiMagics.approvals`` (its exact name, else the longest
   matching glob pattern such as ``"files__*"``);
2. the tool's own policy: an ``approval`` attribute of ``ask``/``auto``/``deny`` (every
   ``McpTool`` has one, from its server's ``approve`` config, ``ask`` by default);
3. the run's policy (``--approve``, ``c.PiMagics.approve``, else the default below) for the
   tools that need approval: the state-changing notebook tools (``run_code``,
   ``insert_cell``, ``set_variable``) and every tool with ``requires_approval`` set
   (``@tool(requires_approval=True)``);
4. any other tool runs without asking.

``ask`` where nobody can click (headless, inactive controls) becomes ``deny``, and the tool
result says why.

Where a card asks, it also offers "Allow for this conversation" (not for ``delete_cells``
nor an always-ask call): the conversation's grant (``sessions/grants.py``, by tool name or MCP
server, never by call id) then stands in for the click on later ``ask`` calls of that tool.
A run nobody can click gets no grants at all. Before any call, the run's loop guard
(``loop_guard.py``) may ask about a repeated call; denied, it is blocked.

Headless detection (a run with nobody to click must never wait for a human):

1. ``PI_NOTEBOOK_HEADLESS=1`` / ``0`` (also ``true``/``false``, ``yes``/``no``) forces it.
2. Otherwise the run is headless when the cell's ``execute_request`` was sent with
   ``allow_stdin: false``. nbclient (so nbconvert and papermill) and nbval always send
   that; JupyterLab sends ``true`` (it can answer ``input()``), as does every frontend built on
   ``@jupyterlab/services`` defaults.
   The flag is per request, so one kernel can serve both kinds of client correctly.

Default policy: ``ask`` when someone can click, ``deny`` otherwise (headless, no kernel,
ipykernel < 7.4, the non-awaited fallback). ``ask`` where nobody can click degrades to
``deny``, and the output says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ...agent.types import AgentTool, BeforeToolCallContext, BeforeToolCallResult
from ...ai.abort import AbortSignal
from ...ai.types import ToolCall
from ..config import POLICIES, Policy
from ..host.compat import get_kernel, inactive_controls_reason, widgets_available
from ..host.headless import Headless, detect_headless
from ..sessions.grants import GRANTED, Grants, offer_label
from ..tools.edits import PreviewRefused
from ..tools.notebook_tools import STATE_CHANGING_TOOLS
from .loop_guard import LoopGuard, canonical_json

USER_DENIED = "Tool call denied by the user."
USER_REJECTED = "The user rejected this change; nothing was changed."
ALWAYS_ASK = frozenset({"delete_cells"})
"""Tools that ask even under ``--approve auto`` (an entry in ``c.PiMagics.approvals`` still
decides for them)."""
Preview: TypeAlias = Callable[[str, dict[str, Any]], Awaitable[str | None]]
"""What the card shows while a call waits (an edit's diff); raises ``PreviewRefused`` for a
call that would be refused anyway."""
FALLBACK_REASON = (
    "Controls inactive: %%pi ran as a plain cell magic (autoawait off or called from code), "
    "so nothing answers a click."
)


@dataclass(frozen=True, slots=True)
class RunMode:
    """How a run can be watched: live widgets or one static output, and whether anyone can click."""

    live: bool
    can_ask: bool
    headless: Headless
    reason: str | None
    """Why the controls are inactive (``None`` when they work)."""


def run_mode(shell: Any, *, awaited: bool, text: bool) -> RunMode:
    """The mode of a run in ``shell``: ``awaited`` (the input transformer's path, not the
    fallback cell magic) and ``text`` (``--text``: no widgets)."""
    headless = detect_headless(shell)
    kernel = get_kernel(shell)
    if not awaited:
        reason: str | None = FALLBACK_REASON
    elif text:
        reason = "Controls inactive: --text output has no widgets."
    elif kernel is not None and not widgets_available():
        reason = "Controls inactive: ipywidgets is not installed."
    else:
        reason = inactive_controls_reason(shell)
    live = awaited and kernel is not None and not text and not headless.headless and widgets_available()
    return RunMode(live=live, can_ask=live and reason is None, headless=headless, reason=reason)


@dataclass(frozen=True, slots=True)
class ApprovalSetup:
    policy: Policy
    """The policy in force for this run."""
    notice: str | None
    """One line for the output when the policy was chosen or degraded for the user."""


def resolve_policy(
    requested: Policy | None,
    *,
    can_ask: bool,
    headless: Headless,
    inactive_reason: str | None = None,
    gated: Iterable[str] = STATE_CHANGING_TOOLS,
) -> ApprovalSetup:
    """The effective policy and the notice that explains it.

    ``can_ask``: someone can click Approve / Deny in this run. ``inactive_reason``: why they
    cannot (when not headless), e.g. the kernel is too old. ``gated``: the tools of the run
    that ``--approve`` governs (the notice names them).
    """
    policy: Policy = requested or ("ask" if can_ask else "deny")
    if policy == "ask" and not can_ask:
        policy = "deny"
    names = sorted(gated)
    blocked = ", ".join(names) or "no tool"
    one = len(names) <= 1
    if policy == "deny":
        how = f"{blocked} {'is' if one else 'are'} blocked"
    else:
        free = [n for n in names if n not in ALWAYS_ASK]
        asks = [n for n in names if n in ALWAYS_ASK]
        how = f"{', '.join(free) or 'no tool'} {'runs' if len(free) <= 1 else 'run'} without asking"
        if asks:
            how += f" ({', '.join(asks)} always {'asks' if len(asks) == 1 else 'ask'})"
    if headless.headless:
        hint = " (pass --approve auto to allow them)" if policy == "deny" else ""
        if requested == "ask":  # the user asked for buttons: say why there are none
            return ApprovalSetup(
                policy,
                f"Headless run ({headless.reason}): --approve ask became deny, since nobody can "
                f"click Approve; {how}{hint}.",
            )
        return ApprovalSetup(policy, f"Headless run: approvals follow --approve {policy}; {how}{hint}.")
    if not can_ask:
        why = inactive_reason or "Controls inactive: nobody can click Approve in this run."
        follows = (
            "--approve ask became deny" if requested == "ask" else f"Approvals follow --approve {policy}"
        )
        return ApprovalSetup(policy, f"{why} {follows}: {how}.")
    return ApprovalSetup(policy, None)


def policy_denied_reason(policy: Policy, headless: bool) -> str:
    where = " in this headless run" if headless else ""
    return (
        f"Tool call denied: the approval policy{where} is '{policy}'. "
        "The user can allow state-changing tools with `%%pi --approve auto`."
    )


RequestApproval: TypeAlias = Callable[[str], "asyncio.Future[bool] | Awaitable[bool]"]
MarkApproval: TypeAlias = Callable[[str, bool], None]
NoteApproval: TypeAlias = Callable[[str, str], None]
"""Show why a call waits for approval (the reason a hook gave) on its tool card."""


@runtime_checkable
class GrantUI(Protocol):
    """The live view's side of "Allow for this conversation" (``LiveView``)."""

    def offer_grant(self, tool_call_id: str, label: str) -> None: ...

    def took_grant(self, tool_call_id: str) -> bool: ...

    def show_granted(self, tool_call_id: str, text: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The policy of one tool and where it came from (for the reason of a denial)."""

    policy: Policy
    source: Literal["config", "tool", "run", "always"]
    key: str = ""
    """The ``c.PiMagics.approvals`` entry that matched (source ``config``)."""


def configured_policy(approvals: Mapping[str, Policy], name: str) -> tuple[str, Policy] | None:
    """The ``approvals`` entry for tool ``name``: its exact name, else the longest matching
    glob pattern (``files__*`` covers every tool of the MCP server ``files``)."""
    if name in approvals:
        return name, approvals[name]
    patterns = [key for key in approvals if any(c in key for c in "*?[") and fnmatchcase(name, key)]
    if not patterns:
        return None
    best = max(patterns, key=len)
    return best, approvals[best]


def own_policy(tool: AgentTool | None) -> Policy | None:
    """A tool's own policy: its ``approval`` attribute (``McpTool`` has one), if valid."""
    value = getattr(tool, "approval", None)
    return value if value in POLICIES else None


def tool_policy(
    name: str, tool: AgentTool | None, approvals: Mapping[str, Policy], run_policy: Policy
) -> ToolPolicy | None:
    """The policy of a call of ``name`` (``None``: not gated); see the module docstring."""
    found = configured_policy(approvals, name)
    if found is not None:
        return ToolPolicy(found[1], "config", found[0])
    own = own_policy(tool)
    if own is not None:
        return ToolPolicy(own, "tool")
    if name in STATE_CHANGING_TOOLS or (tool is not None and tool.requires_approval):
        return ToolPolicy(run_policy, "run")
    return None


def gated_by_run(tools: Iterable[tuple[str, AgentTool | None]], approvals: Mapping[str, Policy]) -> list[str]:
    """The names of ``tools`` whose policy is the run's (``--approve``): gated, and neither
    ``approvals`` nor the tool's own policy decides for them."""
    return [
        name
        for name, tool in tools
        if (decided := tool_policy(name, tool, approvals, "deny")) is not None and decided.source == "run"
    ]


def denied_reason(name: str, decision: ToolPolicy, *, headless: bool) -> str:
    """What the model reads when the policy (not a click) blocked a call of ``name``."""
    if decision.source == "run":
        return policy_denied_reason(decision.policy, headless)
    if decision.source == "always":
        nobody = "this run is headless" if headless else "nobody can click Approve in this run"
        return f"Tool call denied: {name} always asks the user, and {nobody}."
    config = decision.source == "config"
    where = f"c.PiMagics.approvals[{decision.key!r}]" if config else "its own approval policy"
    if decision.policy == "deny":
        return f"Tool call denied: {name} is blocked by {where} ('deny')."
    nobody = "this run is headless" if headless else "nobody can click Approve in this run"
    return f"Tool call denied: {name} needs approval ({where} is 'ask') and {nobody}."


CallKey: TypeAlias = tuple[str, str, str]
"""One tool call as a comparable value: its id, its tool and its arguments (canonical JSON)."""


def call_key(call: ToolCall) -> CallKey:
    return call.id, call.name, canonical_json(call.arguments)


class ApprovalGate:
    """A ``before_tool_call`` hook applying the approval policies of a run.

    ``policy``: the run's policy (already resolved: ``ask`` only when someone can click).
    ``approvals``: the per-tool map. ``request(tool_call_id)`` asks the user (the live view's
    Approve / Deny; ``None`` when nobody can click); ``mark`` shows a decision taken without
    asking on the card; ``note`` shows a hook's reason on the card; ``signal()`` is the run's
    abort signal, which ends a wait for a click; ``announce`` is called once, at the first call
    the run's policy decides (the runner shows the policy's line then, not before).

    Nothing is remembered by tool-call id: a click answers the one call it was asked for, and
    an approval given before the gate decides (``ask_approval``, ``approve``) is bound to the
    exact call (id, tool, arguments) and counts once; ``delete_cells`` asks every time.
    ``grants`` (the conversation's, ``None`` where nobody can click) and ``grant_ui`` (the live
    view) offer and apply "Allow for this conversation"; ``guard`` asks before a repeated call.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        request: RequestApproval | None = None,
        mark: MarkApproval | None = None,
        note: NoteApproval | None = None,
        approvals: Mapping[str, Policy] | None = None,
        headless: bool = False,
        signal: Callable[[], AbortSignal | None] | None = None,
        announce: Callable[[], None] | None = None,
        preview: Preview | None = None,
        grants: Grants | None = None,
        grant_ui: GrantUI | None = None,
        guard: LoopGuard | None = None,
    ) -> None:
        if policy == "ask" and request is None:
            raise ValueError("policy 'ask' needs a way to ask")
        self.policy, self.request, self.mark, self.note = policy, request, mark, note
        self.approvals: dict[str, Policy] = dict(approvals or {})
        self.headless = headless
        self._signal = signal
        self._announce = announce
        self._preview = preview
        self.grants = grants
        """The conversation's grants (``None``: none offered nor applied, as in a headless run)."""
        self.grant_ui = grant_ui
        self.guard = guard
        self.denied: list[str] = []
        self._asked: list[CallKey | str] = []
        """Approvals given through ``ask_approval`` since the gate's last decision: the exact
        call, or an id (bound to the next call the gate decides, if it has that id)."""
        self._clicked: list[CallKey] = []
        """Exact calls approved before they reached the gate (``approve``); each counts once."""

    def decision(self, name: str, tool: AgentTool | None) -> ToolPolicy | None:
        decision = tool_policy(name, tool, self.approvals, self.policy)
        auto = decision is not None and decision.source == "run" and decision.policy == "auto"
        if name in ALWAYS_ASK and auto:
            # --approve auto is for the run's tools; deleting cells asks even then
            return ToolPolicy("ask", "always")
        return decision

    async def __call__(
        self, ctx: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        call = ctx.tool_call
        tool = find_tool(ctx.context.tools, call.name)
        decision = self.decision(call.name, tool)
        if decision is not None and decision.source == "run" and self._announce is not None:
            announce, self._announce = self._announce, None
            announce()
        looping = await self._guard_loop(call, signal)
        if looping is not None:
            return looping
        approved = self._take_approval(call)
        if decision is None or decision.policy == "auto":
            return None
        if decision.policy == "ask" and approved and call.name not in ALWAYS_ASK:
            return None
        if decision.policy == "deny" or self.request is None:
            self._mark(call.id, False)
            self.denied.append(call.id)
            reason = denied_reason(call.name, decision, headless=self.headless)
            return BeforeToolCallResult(block=True, reason=reason)
        if self._granted(call, tool, decision):
            return None
        shown: str | None = None
        if self._preview is not None:
            try:
                shown = await self._preview(call.name, dict(call.arguments or {}))
            except PreviewRefused as exc:  # refused anyway: nobody is asked to approve it
                self._mark(call.id, False)
                self.denied.append(call.id)
                return BeforeToolCallResult(block=True, reason=str(exc))
        self._offer(call, tool, decision)
        if await self._ask(call.id, shown, signal=signal):
            if self.grant_ui is not None and self.grants is not None and self.grant_ui.took_grant(call.id):
                self.grants.allow(call.name, tool)
                self.grant_ui.show_granted(call.id, GRANTED)
            return None
        return BeforeToolCallResult(block=True, reason=USER_DENIED if shown is None else USER_REJECTED)

    def _grantable(self, name: str, decision: ToolPolicy) -> bool:
        """A grant may stand for a click on this call: an ``ask`` that is not always-ask, in a
        run that offers grants (someone can click)."""
        offered = self.grants is not None and self.grant_ui is not None and self.request is not None
        return offered and decision.source != "always" and name not in ALWAYS_ASK

    def _granted(self, call: ToolCall, tool: AgentTool | None, decision: ToolPolicy) -> bool:
        """The conversation's grant lets this call through: the card says so."""
        if not self._grantable(call.name, decision) or self.grants is None:
            return False
        if not self.grants.covers(call.name, tool):
            return False
        if self.grant_ui is not None:
            self.grant_ui.show_granted(call.id, GRANTED)
        return True

    def _offer(self, call: ToolCall, tool: AgentTool | None, decision: ToolPolicy) -> None:
        if self._grantable(call.name, decision) and self.grant_ui is not None:
            self.grant_ui.offer_grant(call.id, offer_label(call.name, tool))

    async def _guard_loop(self, call: ToolCall, signal: AbortSignal | None) -> BeforeToolCallResult | None:
        """The loop guard asks before a call that would make ``limit`` identical calls in a
        row; denied (or nobody to ask), the call does not run and the run stops after the turn."""
        guard = self.guard
        if guard is None:
            return None
        question = guard.before_call(call.name, call.arguments)
        if question is None:
            return None
        if await self._ask(call.id, question, signal, remember=call_key(call)):
            return None
        guard.trip(call.name)
        return BeforeToolCallResult(block=True, reason=guard.blocked_reason())

    def approve(self, calls: Iterable[ToolCall]) -> None:
        """Count a click already given on these exact calls' cards as their approval (once each)."""
        self._clicked.extend(call_key(call) for call in calls)

    def _take_approval(self, call: ToolCall) -> bool:
        """Whether the user approved this exact call before the gate saw it. An approval counts
        once, for the call it was given for: never for another call under the same id (servers
        reuse ids), and an ``ask_approval`` answer lasts only until the gate's next decision."""
        key = call_key(call)
        asked, self._asked = self._asked, []
        if key in self._clicked:
            self._clicked.remove(key)
            return True
        return key in asked or call.id in asked

    async def ask(
        self,
        tool_call_id: str,
        reason: str | None = None,
        signal: AbortSignal | None = None,
        *,
        call: ToolCall | None = None,
    ) -> bool:
        """Ask the user about one call for a hook or a tool (``ask_approval``): an approval then
        counts for the gate's next decision, if that is about this exact ``call`` (given), or
        about a call with this id (only the id given)."""
        remember: CallKey | str = call_key(call) if call is not None else tool_call_id
        return await self._ask(tool_call_id, reason, signal, remember=remember)

    async def _ask(
        self,
        tool_call_id: str,
        reason: str | None = None,
        signal: AbortSignal | None = None,
        *,
        remember: CallKey | str | None = None,
    ) -> bool:
        """Ask the user about one call (Approve / Deny on its card); ``False`` at once when
        nobody can click, and as soon as the run is aborted. ``remember``: what an approval
        binds to, for the gate's decision that follows."""
        if self.request is None:
            self._mark(tool_call_id, False)
            self.denied.append(tool_call_id)
            return False
        if reason and self.note is not None:
            self.note(tool_call_id, reason)
        if signal is None and self._signal is not None:
            signal = self._signal()
        approved = await _race_abort(self.request(tool_call_id), signal)
        if approved:
            if remember is not None:
                self._asked.append(remember)
            if reason and self.note is not None:
                self.note(tool_call_id, "")  # answered: the card shows the tool's own progress
        else:
            self.denied.append(tool_call_id)
        return approved

    def _mark(self, tool_call_id: str, approved: bool) -> None:
        if self.mark is not None:
            self.mark(tool_call_id, approved)


def find_tool(tools: Sequence[AgentTool] | None, name: str) -> AgentTool | None:
    return next((t for t in tools or () if t.name == name), None)


# --- asking from a user hook ---------------------------------------------------------------------

_ACTIVE: ContextVar[ApprovalGate | None] = ContextVar("pi_notebook_approval_gate", default=None)


def activate(gate: ApprovalGate) -> Token[ApprovalGate | None]:
    """Make ``gate`` the one ``ask_approval`` uses in this context (the runner, per run)."""
    return _ACTIVE.set(gate)


def deactivate(token: Token[ApprovalGate | None]) -> None:
    _ACTIVE.reset(token)


async def ask_approval(
    tool_call: ToolCall | str, reason: str | None = None, signal: AbortSignal | None = None
) -> bool:
    """Ask the user to approve ``tool_call`` (a ``ToolCall`` or its id) with Approve / Deny on
    its tool card, showing ``reason``; ``True`` when approved.

    For code running inside a ``%%pi`` run: its ``before_tool_call`` hook, typically, or a
    tool. Where nobody can click (headless, ``--text``, inactive controls) the answer is
    ``False`` at once, and a Stop or interrupt answers ``False`` too. The call approved here
    (from a ``before_tool_call`` hook: the one being decided) is not asked about again by the
    run's own policy; a ``deny`` policy still blocks it, ``delete_cells`` still asks, and the
    approval holds for that call alone: not for a later call with the same id, nor, when you
    pass only an id, beyond the policy's decision on the next call.
    """
    gate = _ACTIVE.get()
    if gate is None:
        raise RuntimeError(
            "ask_approval works only while a %%pi run is going (in its before_tool_call hook or a "
            "tool); outside one there is nobody to ask."
        )
    if isinstance(tool_call, str):
        return await gate.ask(tool_call, reason, signal)
    return await gate.ask(tool_call.id, reason, signal, call=tool_call)


async def _race_abort(answer: asyncio.Future[bool] | Awaitable[bool], signal: AbortSignal | None) -> bool:
    """The user's answer, or False as soon as the run is aborted (Stop while a card waits)."""
    return bool(await answer_or_abort(answer, signal, False))


async def answer_or_abort(answer: Awaitable[Any], signal: AbortSignal | None, default: Any) -> Any:
    """What ``answer`` resolves to, or ``default`` as soon as ``signal`` aborts (a Stop or an
    interrupt while a question waits for a click)."""
    future = asyncio.ensure_future(answer)
    if signal is None:
        return await future
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({future, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not future.done():
            future.cancel()
    return future.result() if future.done() and not future.cancelled() else default


def explain_policy(requested: Policy | None, mode: RunMode) -> str:
    """The policy a run in ``mode`` would follow and why, on one line (``%pi status``)."""
    policy = resolve_policy(requested, can_ask=mode.can_ask, headless=mode.headless).policy
    if mode.headless.headless:
        nobody = f"headless run: {mode.headless.reason}"
    else:
        nobody = (mode.reason or "nobody can click Approve").removeprefix("Controls inactive: ")
    if requested is None:
        why = (
            "default: Approve / Deny buttons"
            if policy == "ask"
            else f"default when nobody can click; {nobody}"
        )
    elif requested != policy:
        why = f"configured {requested!r}, but {nobody}"
    else:
        why = f"configured {requested!r}"
    return f"{policy} ({why})"
