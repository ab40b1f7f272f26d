"""``pi_notebook.runtime.resources``: Pi 0.83's resources for a working directory, read as Pi
reads them: context files (``AGENTS.md`` / ``CLAUDE.md``), skills (``SKILL.md`` folders),
prompt templates (``/name args``) and project trust (Pi's ``trust.json``).

* ``loader``: ``ResourceLoader(cwd).current()`` -> ``Resources`` (what loaded, diagnostics,
  what was skipped and why; ``system_prompt(base)``, ``expand(text)``).
* ``trust``: ``project_trust(cwd)``, ``is_trusted(cwd)``, ``save_trust(...)``.
* ``context``, ``skills``, ``templates``, ``prompt``: Pi's rules, one module each.
* ``skill_tool``: the read-only ``read`` tool limited to the skills' folders.
* ``files``: safe reading (size and binary limits), frontmatter, ignore files.

No IPython; imports ``session`` (Pi's agent dir) and ``agent`` (the tool type) only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from .context import ContextFile
    from .files import Diagnostic
    from .loader import ResourceLoader, Resources
    from .skills import Skill
    from .templates import PromptTemplate
    from .trust import ProjectTrust, is_trusted, project_trust, save_trust

_HOMES = {
    "ContextFile": "context",
    "Diagnostic": "files",
    "ProjectTrust": "trust",
    "PromptTemplate": "templates",
    "ResourceLoader": "loader",
    "Resources": "loader",
    "Skill": "skills",
    "is_trusted": "trust",
    "project_trust": "trust",
    "save_trust": "trust",
}

__all__ = [
    "ContextFile",
    "Diagnostic",
    "ProjectTrust",
    "PromptTemplate",
    "ResourceLoader",
    "Resources",
    "Skill",
    "is_trusted",
    "project_trust",
    "save_trust",
]

__getattr__, __dir__ = exports(__name__, _HOMES, __all__)
