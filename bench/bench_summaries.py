"""How long ``inspect_variable``'s summary takes for a large value of each data library, against
the floor measured in the same run: the pandas summary of an equal-sized frame (10 million
rows: a float column with NaNs, an int column, a string column), the summary the notebook
tools had before the other libraries.

For each value: the median wall time of ``summarize(value)`` over the repetitions (after one
warm-up call, which pays for the library's lazy initialisation), its ratio to the pandas floor,
and, for reference, the time of the library's own ``repr``. The lazy values (polars
``LazyFrame``, DuckDB relation, dask and Spark frames) are summarised from their plan, so their
time does not grow with the data. Wall time, not CPU: polars and DuckDB use their thread pools.

    python -m bench.bench_summaries              # median of 5 runs per value
    python -m bench.bench_summaries --reps 9 --rows 1000000
    python -m bench.bench_summaries --no-spark   # skip the Spark session (its JVM starts in ~10 s)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pi_notebook.notebook.tools.references import summarize


def columns(rows: int) -> dict[str, Any]:
    x = np.linspace(0.0, 1.0, rows)
    x[::1000] = np.nan
    words = np.empty(rows, dtype=object)
    words[0::2], words[1::2] = "a", "b"
    return {"x": x, "n": np.arange(rows), "w": words}


def values(rows: int, spark: bool) -> dict[str, Any]:
    import dask.dataframe as dd
    import duckdb
    import polars as pl
    import pyarrow as pa
    import torch
    import xarray as xr

    data = columns(rows)
    frame = pd.DataFrame({"x": data["x"], "n": data["n"], "w": pd.Series(data["w"], dtype="O")})
    polars_frame = pl.DataFrame({"x": data["x"], "n": data["n"], "w": data["w"].astype(str)})
    found: dict[str, Any] = {
        "pandas DataFrame (floor)": frame,
        "polars DataFrame": polars_frame,
        "polars Series": polars_frame.get_column("x"),
        "polars LazyFrame": polars_frame.lazy().filter(pl.col("n") > 3).with_columns(y=pl.col("x") * 2),
        "pyarrow Table": pa.table({"x": data["x"], "n": data["n"], "w": data["w"].astype(str)}),
        "torch Tensor (cpu)": torch.from_numpy(data["x"]).float(),
        "torch Tensor (meta)": torch.empty(rows, device="meta"),
        "xarray DataArray": xr.DataArray(data["x"].reshape(-1, 1000), dims=("time", "x")),
        "duckdb relation": duckdb.connect().sql(f"select range as n, range * 0.5 as x from range({rows})"),
        "dask DataFrame": dd.from_pandas(frame, npartitions=10),
    }
    if spark:
        from pyspark.sql import SparkSession

        session = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        found["Spark DataFrame"] = session.range(rows).selectExpr("id as n", "id * 0.5 as x")
    return found


def seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired_ms(fn: Callable[[], Any], floor: Callable[[], Any], reps: int) -> tuple[float, float]:
    """Median ms of ``fn`` and of ``floor``, run in turn (floor, fn, floor, fn, ...) so that load
    from other processes hits both alike; one warm-up call of each first."""
    fn(), floor()
    pairs = [(seconds(floor), seconds(fn)) for _ in range(reps)]
    return statistics.median(p[1] for p in pairs) * 1000, statistics.median(p[0] for p in pairs) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    spark = not args.no_spark and shutil.which("java") is not None
    found = values(args.rows, spark)
    pandas_frame = found["pandas DataFrame (floor)"]
    print(f"{args.rows:,} rows a value; median of {args.reps} runs, each next to a run of the floor")
    print(f"{'value':26} {'summary ms':>10} {'floor ms':>9} {'x floor':>8} {'chars':>6} {'repr ms':>8}")
    for name, value in found.items():
        ms, floor = paired_ms(lambda v=value: summarize(v), lambda: summarize(pandas_frame), args.reps)
        shown_repr, _ = paired_ms(lambda v=value: repr(v), lambda: None, args.reps)
        chars = len(summarize(value))
        print(f"{name:26} {ms:10.2f} {floor:9.1f} {ms / floor:8.3f} {chars:6} {shown_repr:8.2f}")


if __name__ == "__main__":
    main()
