"""Summaries of the values of data libraries: one module a library, found by the module of the
value's type.

``recognise(value)`` walks the classes of ``type(value).__mro__`` and looks up the top-level
package of each class's ``__module__`` (``polars.dataframe.frame`` -> ``polars``) in
``LIBRARIES``; a subclass the user defined in ``__main__`` is found through its base class.
Only then is the library's summary module asked, and it reaches the library through
``sys.modules``: a value whose class comes from a package, that package is imported already.
Nothing here or in the summary modules imports a data library, so a kernel that never imported
torch or pyspark pays a dictionary look-up a class and nothing more.

Each summary module has ``kind(value)`` (the kind of value it summarises, or None),
``summarize(kind, value, limit)`` (a bounded multi-line text) and ``one_line(kind, value)``.

What all of them promise: a lazy value (a polars ``LazyFrame``, a DuckDB relation, a dask or
Spark frame) is never computed, only its schema and plan are shown and the text says so; a
tensor on a GPU is never copied to the CPU; statistics that would cost more than a small fixed
budget on a big value are computed on a sample or skipped, and the text says which.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# The top-level package of a type's module -> the summary module here (duckdb's types live in
# ``_duckdb`` in some releases, torch's base tensor in ``torch._C``).
LIBRARIES = {
    "pandas": "pandas",
    "numpy": "numpy",
    "polars": "polars",
    "pyarrow": "pyarrow",
    "torch": "torch",
    "xarray": "xarray",
    "duckdb": "duckdb",
    "_duckdb": "duckdb",
    "dask": "dask",
    "pyspark": "pyspark",
}


@dataclass(frozen=True, slots=True)
class Recognised:
    """A value of a data library: ``label`` is ``polars.DataFrame``, ``torch.Tensor``, ..."""

    module: ModuleType
    kind: str
    label: str

    def summary(self, value: Any, limit: int) -> str:
        text: str = self.module.summarize(self.kind, value, limit)
        return text

    def one_line(self, value: Any) -> str:
        text: str = self.module.one_line(self.kind, value)
        return text


def recognise(value: Any) -> Recognised | None:
    for cls in type(value).__mro__:
        package = str(getattr(cls, "__module__", "")).partition(".")[0]
        name = LIBRARIES.get(package)
        if name is None or package not in sys.modules:
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        kind = module.kind(value)
        if kind is not None:
            return Recognised(module, kind, f"{name}.{kind}")
    return None
