"""An IPython extension that does nothing: ``bench_request``'s floor for ``%load_ext``."""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Loading it costs only IPython's own extension machinery."""
