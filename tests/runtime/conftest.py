"""Runtime-test fixtures: puts ``tests/ai`` on ``sys.path`` for the OpenAI wire fixtures (the
loopback server comes from ``tests/conftest.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "ai"))
