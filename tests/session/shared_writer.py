"""A second process on one session file (``test_session_shared.py``): opens the file, then for
each line ``turn N`` on stdin appends a user prompt and an answer and prints ``done N``; with
``free N`` it appends N turns at once, as fast as it can. Prints each notice it is told."""

from __future__ import annotations

import sys

from pi_notebook.session import SessionManager


def turn(manager: SessionManager, name: str, n: int) -> None:
    manager.append_message({"role": "user", "content": f"{name} prompt {n}", "timestamp": n})
    manager.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"{name} answer {n}"}],
            "api": "faux",
            "provider": "faux",
            "model": "faux-1",
            "stopReason": "stop",
            "timestamp": n,
        }
    )


def main() -> None:
    path, name = sys.argv[1], sys.argv[2]
    manager = SessionManager.open(path)
    if hasattr(manager, "on_write_notice"):  # an older package (the same test run against it) has none
        manager.on_write_notice(lambda notice: print(f"notice {notice.kind}: {notice.text}", flush=True))
    for line in sys.stdin:
        word, number = line.split()
        if word == "turn":
            turn(manager, name, int(number))
        else:
            for n in range(int(number)):
                turn(manager, name, n)
        print(f"done {number}", flush=True)


if __name__ == "__main__":
    main()
