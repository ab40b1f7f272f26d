"""Writer process for the crash-safety test: appends entries forever to the session given on
the command line, printing each entry id on stdout once its append has returned."""

from __future__ import annotations

import os
import sys

from pi_notebook.session import SessionManager


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    manager = (
        SessionManager.open(path)
        if os.path.exists(path)
        else SessionManager.open(path, cwd_override="/crash")
    )
    out = sys.stdout
    n = 0
    while True:
        n += 1
        size = (seed * 7919 + n * 104729) % 60000  # some lines are large, so a kill can land mid-write
        role = "assistant" if n % 2 else "user"
        message = {"role": role, "content": [{"type": "text", "text": f"{n} " + "x" * size}], "timestamp": n}
        if role == "assistant":
            message.update(api="faux", provider="faux", model="faux-1", stopReason="stop")
        entry_id = manager.append_message(message)
        out.write(entry_id + "\n")
        out.flush()


if __name__ == "__main__":
    main()
