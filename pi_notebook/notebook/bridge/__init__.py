"""The bridge to the live notebook document: a comm from the kernel to the ``pi-notebook-bridge``
labextension (``labextension/`` at the repository root; its build lands in ``labextension/``
here and is installed with the package), which reads and edits the notebook panel whose session
runs this kernel, in JupyterLab 4 and Notebook 7. ``client.py`` is the kernel's end."""

from .client import TARGET, BridgeRefused, BridgeUnavailable, NotebookBridge

__all__ = ["TARGET", "BridgeRefused", "BridgeUnavailable", "NotebookBridge"]
