"""Lazy values are summarised from their schema and plan and never run, proven with sources
that fail when read: a polars LazyFrame over a 2 GB Python source that raises and over a CSV
FIFO that blocks (no writer), a DuckDB relation over an Arrow stream that raises and a Python
UDF that raises, a dask frame of 2,000 partitions whose every read raises (and no task runs),
a Spark frame of 2 billion rows through a raising UDF (and no Spark job starts)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.notebook.tools.references import one_line, summarize

GIGABYTES_2 = 2 * 1024**3
ROWS_2GB = GIGABYTES_2 // 8  # float64 rows of one column


class ReadAttempted(RuntimeError):
    pass


def _raise(*args: Any) -> Any:
    raise ReadAttempted("a summary read the lazy source")


# --- polars ---------------------------------------------------------------------------------------


def test_a_lazy_frame_over_a_2gb_source_that_raises_is_never_collected() -> None:
    pl = pytest.importorskip("polars")
    from polars.io.plugins import register_io_source

    def source(with_columns: Any, predicate: Any, n_rows: Any, batch_size: Any) -> Iterator[Any]:
        _raise()
        for start in range(0, ROWS_2GB, 1_000_000):  # what it would produce: 2 GB of float64
            yield pl.DataFrame({"x": pl.arange(start, start + 1_000_000, eager=True).cast(pl.Float64)})

    lazy = register_io_source(source, schema={"x": pl.Float64})
    lazy = lazy.filter(pl.col("x") > 1).with_columns(y=pl.col("x") * 2)
    with pytest.raises(ReadAttempted):  # the source does fail when read
        lazy.head(1).collect()
    shown = summarize(lazy)
    assert "polars LazyFrame with 2 columns" in shown
    assert "lazy: not computed (schema and plan only; no row was read or collected for this summary)" in shown
    assert "  x: Float64\n  y: Float64" in shown
    assert "plan (as written, not optimized):" in shown
    assert 'FILTER col("x") > 1' in shown
    assert "summary failed" not in shown
    assert one_line(lazy) == "lazy query, not computed (inspect it for its schema and plan)"


def _in_thread(fn: Any, fifo: Path) -> Any:
    """``fn()`` in a thread; if it blocks on the FIFO, a writer is opened to free it and the
    test fails instead of hanging."""
    result: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():
        with open(fifo, "w"):
            pass
        thread.join(10)
        pytest.fail("the summary read the FIFO")
    return result["value"]


def test_a_lazy_csv_scan_over_a_fifo_that_blocks_is_never_read(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    fifo = tmp_path / "big.csv"
    os.mkfifo(fifo)
    lazy = pl.scan_csv(fifo, schema={"id": pl.Int64, "name": pl.String}).filter(pl.col("id") > 3)
    shown = _in_thread(lambda: summarize(lazy), fifo)
    assert "  id: Int64\n  name: String" in shown
    assert "Csv SCAN [" in shown
    assert "not computed" in shown


# --- DuckDB ---------------------------------------------------------------------------------------


def test_a_duckdb_relation_over_a_raising_arrow_stream_and_udf_is_never_executed() -> None:
    duckdb = pytest.importorskip("duckdb")
    pa = pytest.importorskip("pyarrow")
    con = duckdb.connect()

    def batches() -> Iterator[Any]:
        _raise()
        yield pa.record_batch([pa.array([1.0])], names=["x"])

    schema = pa.schema([("x", pa.float64()), ("label", pa.string())])
    relation = con.from_arrow(pa.RecordBatchReader.from_batches(schema, batches())).filter("x > 1")
    shown = summarize(relation)
    assert "lazy: not executed (schema and plan only; no row was read for this summary)" in shown
    assert "  x: DOUBLE\n  label: VARCHAR" in shown
    assert "Python Arrow Scan" in shown
    assert "summary failed" not in shown
    con.create_function("boom", _raise, ["BIGINT"], "DOUBLE", side_effects=True)
    query = con.sql("select boom(range) as v from range(250000000)")  # 2 GB of doubles if run
    with pytest.raises(duckdb.Error, match="a summary read"):
        query.limit(1).fetchall()
    plan = summarize(query)
    assert "  v: DOUBLE" in plan
    assert "select boom(range) as v from range(250000000)" in plan
    assert "~250,000,000 rows" in plan
    assert one_line(query) == "relation, not executed: 1 columns (v DOUBLE)"


# --- dask -----------------------------------------------------------------------------------------


def test_a_dask_frame_of_2gb_partitions_that_raise_runs_no_task() -> None:
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    from dask.callbacks import Callback

    def partition(i: int) -> Any:
        _raise()
        return pd.DataFrame({"x": [float(i)] * 131_072, "s": ["a"] * 131_072})  # 1 MB of x

    meta = pd.DataFrame({"x": pd.Series([], dtype="float64"), "s": pd.Series([], dtype="object")})
    frame = dd.from_map(partition, range(2000), meta=meta)  # 2,000 partitions: 2 GB if read
    derived = frame[frame.x > 1].assign(y=frame.x * 2)
    started: list[Any] = []
    with Callback(start=started.append):
        shown = summarize(derived)
        series = summarize(derived.y)
        listed = one_line(derived)
    assert started == []
    assert "dask DataFrame with 3 columns, 2,000 partitions, divisions unknown" in shown
    assert "lazy: not computed (schema and plan only; no partition was read or run for this summary)" in shown
    assert "  x: float64" in shown
    assert ".<locals>.partition> iterables=[range(0, 2000)]" in shown  # without its memory address
    assert series.startswith("dask Series 'y', dtype float64, 2,000 partitions")
    assert listed == "3 columns, 2000 partitions (not computed)"
    with pytest.raises(ReadAttempted), Callback(start=started.append):
        derived.head(1)
    assert started  # the callback does see a computation


# --- Spark ----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession (master local[1]) for the whole test session."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java (no java on PATH and no JAVA_HOME)")
    sql = pytest.importorskip("pyspark.sql")
    session = (
        sql.SparkSession.builder.master("local[1]")
        .appName("pi-notebook-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_a_spark_frame_of_2_billion_rows_through_a_raising_udf_starts_no_job(spark: Any) -> None:
    functions = pytest.importorskip("pyspark.sql.functions")
    types = pytest.importorskip("pyspark.sql.types")
    boom = functions.udf(_raise, types.DoubleType())
    frame = spark.range(2_000_000_000).withColumn("v", boom("id")).filter("v > 1")
    tracker = spark.sparkContext.statusTracker()
    before = list(tracker.getJobIdsForGroup(None))
    shown = summarize(frame, 3000)
    listed = one_line(frame)
    assert list(tracker.getJobIdsForGroup(None)) == before
    assert "Spark DataFrame with 2 columns" in shown
    assert "lazy: not computed (schema and plan only; no Spark job was started for this summary)" in shown
    assert "  id: bigint not null\n  v: double" in shown
    assert "Range (0, 2000000000" in shown
    assert listed == "2 columns (not computed)"
    spark.range(3).count()  # the tracker does see a job
    assert list(tracker.getJobIdsForGroup(None)) != before
