"""The notebook's glue to Pi session files: ``sessions`` (``NotebookSessions``: one
``AgentSession`` per conversation, where its file goes, the notebook's tags, resume) and
``replay`` (``--replay``: playing a recorded run back). Recording, retry and compaction are
the ``AgentSession``'s (``pi_notebook.runtime``)."""
