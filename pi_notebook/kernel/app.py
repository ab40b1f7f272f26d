"""The application the Pi kernelspec starts: ipykernel's ``IPKernelApp`` with ``PiKernel``, the
``%%pi`` extension loaded and the cell router installed once the shell exists.

It keeps ipykernel's application name, so ``ipython_kernel_config.py`` (``c.PiMagics.model``,
``c.IPKernelApp...``) configures the Pi kernel too. A run that would draw the live widgets asks
the kernel first (``NotebookState.draw_run``): a terminal frontend gets text instead.
"""

from __future__ import annotations

from typing import Any

from ipykernel.kernelapp import IPKernelApp as _IPKernelApp

from ..notebook.state import state_for
from .kernel import PiKernel
from .routing import install_router

__all__ = ["PiKernelApp", "main"]

IPKernelApp: Any = _IPKernelApp  # untyped: its shell is Optional until init_shell has run


class PiKernelApp(IPKernelApp):  # type: ignore[misc]
    def init_extensions(self) -> None:
        super().init_extensions()
        self.shell.extension_manager.load_extension("pi_notebook")
        state_for(self.shell).draw_run = self.kernel.draw_run
        self.kernel.router = install_router(self.shell)


def main() -> None:
    """Start the kernel (the kernelspec's bootstrap calls this)."""
    PiKernelApp.launch_instance(kernel_class=PiKernel)
