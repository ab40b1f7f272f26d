"""Approval policy for tools that change kernel state, and headless detection.

Policies: ``ask`` (Approve / Deny buttons on the tool card), ``auto`` (run without asking),
``deny`` (block; the model gets a tool result saying why). Only the state-changing notebook
tools (``run_code``, ``insert_cell``, ``set_variable``) are gated; read-only tools never are.

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
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..agent.types import BeforeToolCallContext, BeforeToolCallResult
from ..ai.abort import AbortSignal
from .kernel_compat import execute_request_content, get_kernel, inactive_controls_reason, widgets_available
from .tools import WRITE_TOOLS

Policy: TypeAlias = Literal["ask", "auto", "deny"]
POLICIES: tuple[Policy, ...] = ("ask", "auto", "deny")
STATE_CHANGING_TOOLS: frozenset[str] = frozenset(WRITE_TOOLS)
"""The notebook tools the policy gates (declared with ``changes_state=True`` in ``tools.py``)."""

HEADLESS_ENV = "PI_NOTEBOOK_HEADLESS"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})

USER_DENIED = "Tool call denied by the user."
FALLBACK_REASON = (
    "Controls inactive: %%pi ran as a plain cell magic (autoawait off or called from code), "
    "so nothing answers a click."
)


@dataclass(frozen=True, slots=True)
class Headless:
    headless: bool
    reason: str


def detect_headless(shell: Any, env: Mapping[str, str] | None = None) -> Headless:
    """Decide whether nobody can click in this run; see the module docstring for the rules."""
    forced = (os.environ if env is None else env).get(HEADLESS_ENV, "").strip().lower()
    if forced in _TRUE:
        return Headless(True, f"{HEADLESS_ENV}={forced}")
    if forced in _FALSE:
        return Headless(False, f"{HEADLESS_ENV}={forced}")
    kernel = get_kernel(shell)
    if kernel is None:
        return Headless(False, "no kernel")
    content = execute_request_content(kernel)
    if content is not None and not content.get("allow_stdin", False):
        return Headless(
            True, "the client sent the cell without stdin (nbclient, nbconvert, nbval, papermill)"
        )
    return Headless(False, "interactive client")


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
    requested: Policy | None, *, can_ask: bool, headless: Headless, inactive_reason: str | None = None
) -> ApprovalSetup:
    """The effective policy and the notice that explains it.

    ``can_ask``: someone can click Approve / Deny in this run. ``inactive_reason``: why they
    cannot (when not headless), e.g. the kernel is too old.
    """
    policy: Policy = requested or ("ask" if can_ask else "deny")
    if policy == "ask" and not can_ask:
        policy = "deny"
    blocked = ", ".join(sorted(STATE_CHANGING_TOOLS))
    how = f"{blocked} are blocked" if policy == "deny" else f"{blocked} run without asking"
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


class ApprovalGate:
    """A ``before_tool_call`` hook applying ``policy`` to the tools in ``gated``.

    ``request(tool_call_id)`` asks the user (the live view's Approve / Deny); ``mark`` tells the
    view the outcome of a policy decision so the card shows it.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        request: RequestApproval | None = None,
        mark: MarkApproval | None = None,
        gated: frozenset[str] = STATE_CHANGING_TOOLS,
        headless: bool = False,
    ) -> None:
        if policy == "ask" and request is None:
            raise ValueError("policy 'ask' needs a way to ask")
        self.policy, self.request, self.mark, self.gated, self.headless = (
            policy,
            request,
            mark,
            gated,
            headless,
        )
        self.denied: list[str] = []

    async def __call__(
        self, ctx: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        call = ctx.tool_call
        if call.name not in self.gated or self.policy == "auto":
            return None
        if self.policy == "deny":
            self._mark(call.id, False)
            self.denied.append(call.id)
            return BeforeToolCallResult(block=True, reason=policy_denied_reason(self.policy, self.headless))
        assert self.request is not None
        approved = await _race_abort(self.request(call.id), signal)
        if approved:
            return None
        self.denied.append(call.id)
        return BeforeToolCallResult(block=True, reason=USER_DENIED)

    def _mark(self, tool_call_id: str, approved: bool) -> None:
        if self.mark is not None:
            self.mark(tool_call_id, approved)


async def _race_abort(answer: asyncio.Future[bool] | Awaitable[bool], signal: AbortSignal | None) -> bool:
    """The user's answer, or False as soon as the run is aborted (Stop while a card waits)."""
    future = asyncio.ensure_future(answer)
    if signal is None:
        return bool(await future)
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({future, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not future.done():
            future.cancel()
    return bool(future.result()) if future.done() and not future.cancelled() else False


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
