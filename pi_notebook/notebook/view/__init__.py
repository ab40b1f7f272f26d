"""What a run looks like: ``reduce`` folds agent and session events into a ``ViewState``
(``state``), with no widget imports; ``notices`` owns the lines under a run (retries,
compactions); ``render`` turns a ``ViewState`` into ``text/plain``, static ``text/html`` and
Markdown; ``live`` (with the widget ``parts``) is the ipywidgets output of a running cell;
``run_view`` is the ``RunView`` protocol the runner draws into, and ``StaticView``."""
