"""The notebook's conversations and their Pi session files: ``conversations`` (the registry:
name -> ``AgentSession``, the only place a conversation is created, replaced, reset, resumed or
moved), ``files`` (``SessionFiles``: where a conversation's file goes, the notebook's tags,
which recordings are this notebook's), ``observer`` (the hooks a recorder of the conversations
plugs into) and ``replay`` (``--replay``: playing a recorded run back). Recording, retry and
compaction are the ``AgentSession``'s (``pi_notebook.runtime``)."""
