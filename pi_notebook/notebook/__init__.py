"""``pi_notebook.notebook``: the Jupyter layer, the only one that imports IPython, ipykernel and
ipywidgets.

* ``view``: the pure reducer ``AgentEvent -> ViewState`` (no widget imports).
* ``render`` (``text``, ``static_html``, ``markdown``): deterministic ``text/plain``, static
  ``text/html`` and Markdown for the frontend, all from a ``ViewState``.
* ``widgets`` (+ ``widgets_cards``): ``LiveView``, the live ipywidgets output with coalesced
  updates and Stop / Approve / Deny / steering controls; ``run_view``: the ``RunView`` protocol
  the runner draws into, and ``StaticView``.
* ``state``: ``NotebookState``, one per shell: conversations, defaults, notebook tools, cell
  error log, approval setup, the kernel's MCP servers, and the observer hooks a conversation
  recorder plugs into.
* ``options`` (``PiConfig``, the ``%%pi`` parser), ``magics`` (``PiMagics``: ``%%pi``
  fallback and ``%pi``), ``runner`` (one run), ``extension`` (``%load_ext``), ``approval``
  (policies, the gate, ``ask_approval`` for user hooks), ``mcp_magic`` (``%pi mcp``),
  ``interrupts`` (SIGINT and the fallback's main-thread bridge), ``tools`` and ``cells`` (the
  notebook tools), ``references`` (bounded, secret-safe summaries), ``result`` (``PiResult``),
  ``conversations`` (the functions behind ``pi_notebook.current()``), ``faux_stand_in``.

Importing this package imports nothing heavy; import the submodules you need.
"""
