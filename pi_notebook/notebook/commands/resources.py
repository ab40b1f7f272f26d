"""``%pi resources``, ``%pi reload``, ``%pi trust`` and ``%pi prompt``: what Pi's context files,
skills and templates of the notebook's folder load (and what is left out, and why), reading
them again, the folder's project trust in Pi's trust store (``notebook/resources.py``), and the
system prompt the next run sends with them in it."""

from __future__ import annotations

import os

from IPython.core.error import UsageError

from ...runtime.resources.loader import Resources
from ...runtime.resources.trust import TrustStoreError
from ..config import DEFAULT_NAME
from ..state import NotebookState

__all__ = ["RESOURCE_SUBCOMMANDS", "describe"]

HELP = """\
  resources               the folder's AGENTS.md files, skills and templates: what loads, what
                          is hidden from the model, what was skipped and why
  reload                  read them again now (they are re-read anyway when a file changes)
  trust [--parent | --revoke]   trust the notebook's folder (or its parent) in Pi's trust store, or
                          stop trusting it; project skills, templates and settings need it
  prompt                  the system prompt the conversation's next run sends: its own, with the
                          folder's <project_context> and <available_skills> blocks
"""


def _trust_line(found: Resources) -> str:
    trust = found.trust
    if not trust.needs_trust:
        return "trusted (no project resources that need trust)"
    if found.trusted:
        where = f" (Pi's trust store, for {trust.decided_at})" if trust.decided_at else ""
        return "trusted" + where
    if trust.problem:
        return f"not trusted: {trust.problem}"
    if trust.decision is False:
        return f"not trusted (Pi's trust store, for {trust.decided_at}); %pi trust to trust it"
    if trust.default == "never":
        return "not trusted (Pi's defaultProjectTrust is never); %pi trust to trust it"
    return "not decided yet: untrusted until you answer the question of a %%pi cell or run %pi trust"


def describe(found: Resources, context_files: bool = True) -> str:
    """The text of ``%pi resources``."""
    lines = [f"Resources of {found.cwd}: {_trust_line(found)}"]
    if not context_files:
        lines.append("Context files: off (c.PiMagics.context_files = False)")
    else:
        lines.append(f"Context files ({len(found.context_files)}):")
        lines += [f"  {f.path}" for f in found.context_files]
    lines.append(f"Skills ({len(found.skills)}):")
    for skill in found.skills:
        hidden = f"; hidden from the model (disable-model-invocation), /skill:{skill.name} still works"
        shown = hidden if skill.disable_model_invocation else ""
        lines.append(f"  {skill.name} ({skill.scope}) {skill.file_path}{shown}")
    lines.append(f"Templates ({len(found.templates)}):")
    for template in found.templates:
        hint = f" {template.argument_hint}" if template.argument_hint else ""
        where = f"({template.scope}) {template.file_path}"
        lines.append(f"  /{template.name}{hint} {where}: {template.description}")
    if found.skipped:
        lines.append("Skipped:")
        lines += [f"  {os.path.relpath(path, found.cwd)}: {why}" for path, why in found.skipped]
    if found.diagnostics:
        lines.append("Problems:")
        lines += [f"  {d.line()}" for d in found.diagnostics]
    return "\n".join(lines)


def _resources_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    if rest:
        raise UsageError("%pi resources takes no arguments; it lists what the notebook's folder loads")
    print(describe(state.resources.current(), bool(state.config.context_files)))


def _reload_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    if rest:
        raise UsageError("%pi reload takes no arguments")
    found = state.resources.reload()
    print(
        f"reloaded {found.cwd}: {len(found.context_files)} context files, {len(found.skills)} skills, "
        f"{len(found.templates)} templates, {len(found.diagnostics)} problems (%pi resources lists them)"
    )


def _trust_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    words = rest.split()
    unknown = [w for w in words if w not in ("--revoke", "--parent")]
    if unknown or len(words) > 1:
        raise UsageError("usage: %pi trust [--parent | --revoke]")
    try:
        line = state.resources.set_trust("--revoke" not in words, parent="--parent" in words)
    except TrustStoreError as exc:
        raise UsageError(str(exc)) from None
    print(line)


def effective_system_prompt(state: NotebookState, name: str | None) -> str:
    """The system prompt conversation ``name``'s next run sends: the conversation's own (``--system``,
    ``c.PiMagics.system``) with the blocks of what the notebook's folder loads now, built by the
    function the run itself uses (``Resources.system_prompt``)."""
    try:
        base = state.conversations.session(name).state.system_prompt
    except ValueError as exc:  # a bad default model, as %pi status says it
        raise UsageError(f"default model: {exc}") from None
    return state.resources.current().system_prompt(base)


def _prompt_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    if rest:
        raise UsageError("%pi prompt takes no arguments; %pi --name NAME prompt shows another conversation's")
    text = effective_system_prompt(state, name)
    key = name or DEFAULT_NAME
    blocks = [b for b in ("<project_context>", "<available_skills>") if b in text]
    has = f", with {' and '.join(blocks)}" if blocks else ""
    head = f"System prompt of conversation {key!r}'s next run ({len(text):,} characters{has})"
    later = "; a cell's --system, and extensions' before_agent_start hooks, may still change it"
    print(f"{head}{later}:\n{text}" if text else f"{head}: empty, the model gets no system prompt")


RESOURCE_SUBCOMMANDS = {
    "resources": _resources_cmd,
    "reload": _reload_cmd,
    "trust": _trust_cmd,
    "prompt": _prompt_cmd,
}
