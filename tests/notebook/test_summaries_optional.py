"""Each data library is optional: summarising values never imports one the user has not
imported (checked in a fresh interpreter, where none is loaded), a class that only claims a
library's module is not taken for it, and a user's subclass of a library type is found
through its base class."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pi_notebook.notebook.tools.references import one_line, summarize
from pi_notebook.notebook.tools.summaries import LIBRARIES, recognise

DATA_LIBRARIES = sorted({*LIBRARIES, "pyarrow.compute", "dask.dataframe", "pyspark.sql"})

FRESH = textwrap.dedent(
    """
    import json, sys
    import pi_notebook.notebook.tools.summaries as summaries
    from pi_notebook.notebook.tools import references
    from pi_notebook.notebook.tools.summaries import (
        common, dask, duckdb, numpy, pandas, polars, pyarrow, pyspark, torch, xarray)

    class Impostor:  # claims to be a polars frame; polars was never imported
        pass
    Impostor.__module__ = "polars.dataframe.frame"

    values = [{"a": [1, 2]}, "text", 3.5, Impostor(), references, range(10), b"x"]
    before = set(sys.modules)
    texts = [references.summarize(v) for v in values] + [references.one_line(v) for v in values]
    data = %r
    print(json.dumps({
        "loaded": sorted(m for m in data if m in sys.modules),
        "new": sorted(set(sys.modules) - before),
        "impostor": texts[3],
    }))
    """
)


def test_no_data_library_is_imported_by_summaries_or_their_modules() -> None:
    script = FRESH % (DATA_LIBRARIES,)
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(done.stdout)
    assert found["loaded"] == []
    assert found["new"] == []  # summarising plain values imports nothing at all
    assert found["impostor"] == "polars.Impostor: <polars.dataframe.frame.Impostor object>"


def test_a_users_subclass_is_summarised_as_its_library_type() -> None:
    pl = pytest.importorskip("polars")

    class Prices(pl.DataFrame):
        pass

    prices = Prices({"p": [1.0, None]})
    found = recognise(prices)
    assert found is not None
    assert found.label == "polars.DataFrame"
    assert "polars DataFrame with 2 rows x 1 columns" in summarize(prices)
    assert one_line(prices) == "2 rows x 1 columns"
    assert recognise({"a": 1}) is None
