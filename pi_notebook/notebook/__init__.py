"""``pi_notebook.notebook``: the Jupyter layer, the only one that imports IPython, ipykernel and
ipywidgets.

* ``view``: the pure reducer ``AgentEvent -> ViewState`` (no widget imports).
* ``render``: deterministic ``text/plain`` and static ``text/html`` of a ``ViewState``.
* ``widgets`` (+ ``widgets_cards``): ``LiveView``, the live ipywidgets output with coalesced
  updates and Stop / Approve / Deny / steering controls.
* The runtime (extension, magic, runner, approval policy, notebook tools) builds on them.

Importing this package imports nothing heavy; import the submodules you need.
"""
