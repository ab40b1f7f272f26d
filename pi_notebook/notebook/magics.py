"""``PiMagics``: the configurable defaults of the ``%%pi`` options (``PiConfig``), the fallback
``%%pi`` cell magic and the ``%pi`` line magic.

The interactive ``%%pi`` path does not go through IPython's magic machinery: the input
transformer (``load.py``) rewrites the cell into ``await run_pi(line, body)``. The cell
magic registered here is the non-interactive fallback (autoawait off, ``run_cell_magic`` from
code). Both parse the same options (``options.py``).

``%load_ext`` registers this class, so the module imports only what the class needs: the
fallback loads the runner, and ``%pi`` its subcommands (``commands/``), on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from IPython.core import magic as _magic
from IPython.core.magic import Magics, magics_class, no_var_expand

from .config import PARSER, PiConfig
from .state import NotebookState, state_for

_F = TypeVar("_F", bound=Callable[..., Any])


def _decorator(factory: Any, *args: Any, **kwargs: Any) -> Callable[[_F], _F]:
    """IPython's magic decorators are untyped; they return the function they decorate."""
    return cast("Callable[[_F], _F]", factory(*args, **kwargs))


@magics_class
class PiMagics(Magics, PiConfig):
    """``%%pi`` / ``%pi``. Traits tagged ``config=True`` are the defaults of every option."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        if shell is not None:
            state_for(shell).config = self

    @property
    def state(self) -> NotebookState:
        return state_for(self.shell)

    @no_var_expand
    @_decorator(_magic.cell_magic, "pi")
    def pi_cell(self, line: str, cell: str) -> None:
        """Run a prompt through the agent (non-interactive fallback; see ``%pi help``)."""
        from .run.cell import run_pi_sync

        run_pi_sync(line, cell, shell=self.shell)

    @no_var_expand
    @_decorator(_magic.line_magic, "pi")
    def pi_line(self, line: str) -> None:
        """``%pi [--name NAME] SUBCOMMAND [ARGS]``; ``%pi help`` lists them."""
        from .commands.conversation import run_command

        run_command(self.state, line)


PiMagics.pi_cell.__doc__ = PARSER.format_help()
