"""``pi_notebook.kernel``: the Pi kernel, a Jupyter kernel in which a cell is a prompt.

It sits above ``notebook``: the kernel is ipykernel's ``IPythonKernel`` with the ``%%pi``
extension loaded and a cell router in front of IPython's input transformers, so a prompt cell
runs exactly as a ``%%pi`` cell with the kernel's defaults (the same transformer, runner and
``AgentSession``), and every other cell is ordinary IPython.

* ``routing``: the one rule that says what a cell is, and the transformer applying it;
* ``kernel``: ``PiKernel`` (routing per request, ``language_info``, completion, inspection,
  ``is_complete``); ``app``: the kernel application the kernelspec starts;
* ``spec``: writing and removing the kernelspec; ``__main__``: ``python -m pi_notebook.kernel
  install | uninstall``.

Importing this package imports nothing: ``spec`` needs only ``jupyter_client``, and the kernel
modules load ipykernel when the kernel starts.
"""
