"""The notebook's glue to Pi session files: ``sessions`` (``NotebookSessions``: where a
notebook's conversations are recorded, resume), ``compact`` (automatic and ``%pi compact``
compaction for a conversation) and ``replay`` (``--replay``: playing a recorded run back)."""
