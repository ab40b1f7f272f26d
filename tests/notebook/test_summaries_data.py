"""Summaries of in-memory values of the data libraries, with real objects, 10 million rows where
size matters: polars ``DataFrame`` / ``Series``, pyarrow ``Table`` / ``RecordBatch`` /
``ChunkedArray``, torch tensors (on the CPU, with autograd, and on the ``meta`` device, which
holds no data, so any read of a value would fail), xarray ``DataArray`` / ``Dataset`` (one
variable backed by a dask array whose every read raises). Through the notebook tools where the
path matters (``inspect_variable``, ``list_variables``, `` $`expr` ``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture  # noqa: F401
from test_notebook_tools import call, text_of

from pi_notebook.notebook.state import state_for
from pi_notebook.notebook.tools.notebook_tools import NotebookTools
from pi_notebook.notebook.tools.references import expand_references, one_line, summarize

ROWS = 10_000_000


@pytest.fixture
def tools(ip: Any) -> NotebookTools:
    return state_for(ip).tools


def inspect(tools: NotebookTools, name: str, max_chars: int = 2000) -> str:
    text = text_of(call(tools, "inspect_variable", name=name, max_chars=max_chars))
    assert len(text) <= max_chars + len(name) + 2
    return text


# --- polars ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_polars() -> Any:
    pl = pytest.importorskip("polars")
    np = pytest.importorskip("numpy")
    x = np.linspace(0.0, 1.0, ROWS)
    x[::1000] = np.nan
    frame = pl.DataFrame({"x": x, "n": np.arange(ROWS), "w": ["a", "b"] * (ROWS // 2)})
    return frame.with_columns(y=pl.when(pl.col("n") % 7 == 0).then(None).otherwise(pl.col("n")))


def test_a_big_polars_frame_shows_schema_nulls_nan_statistics_and_head(
    ip: Any, tools: NotebookTools, big_polars: Any
) -> None:
    ip.user_ns["pf"] = big_polars
    shown = inspect(tools, "pf")
    assert "polars DataFrame with 10,000,000 rows x 4 columns" in shown
    # nulls are polars' own exact counts; NaNs counted exactly within the budget (10,000 = every 1000th)
    assert "y: Int64, 1,428,572 null (14.29%)" in shown
    assert re.search(r"x: Float64, no nulls, 10,000 NaN( in a sample)?", shown)
    assert "w: String, no nulls" in shown
    assert "describe over an evenly spaced sample of 100,000 of 10,000,000 rows" in shown
    assert re.search(r"\n\s+n\s+100,000\s+4\.99995e\+06", shown)  # count and mean of the sample
    assert "head (5 rows):" in shown
    assert "│ 1.0000e-7 ┆ 1   ┆ b   ┆ 1    │" in shown
    listing = text_of(call(tools, "list_variables"))
    assert "10000000 rows x 4 columns" in listing


def test_a_polars_series_and_a_small_frame(ip: Any, tools: NotebookTools, big_polars: Any) -> None:
    pl = pytest.importorskip("polars")
    series = summarize(big_polars.get_column("y"))
    assert series.startswith("polars Series 'y', length 10,000,000, dtype Int64, 1,428,572 null")
    assert "describe (sample of 100,000): count 85,714" in series
    small = summarize(pl.DataFrame({"a": [1, None, 3], "s": ["p", None, "q"]}))
    assert "nulls or NaN in 2 of 2 columns: a (1), s (1)" in small
    assert "describe over all rows" in small
    assert one_line(pl.Series("v", [1.5])) == "length 1, dtype Float64"


def test_a_prompt_reference_to_a_polars_frame_attaches_its_summary(big_polars: Any) -> None:
    text, refs = expand_references("what is in $`pf`?", {"pf": big_polars})
    assert text == "what is in `pf`?"
    assert "polars DataFrame with 10,000,000 rows" in refs[0].summary
    assert len(refs[0].summary) <= 2000


# --- pyarrow --------------------------------------------------------------------------------------


def test_a_big_arrow_table_batch_and_chunked_array(ip: Any, tools: NotebookTools) -> None:
    pa = pytest.importorskip("pyarrow")
    np = pytest.importorskip("numpy")
    x = np.linspace(0.0, 1.0, ROWS)
    x[::1000] = np.nan
    halves = pa.array([1, None] * (ROWS // 2), pa.int32())
    table = pa.table({"x": x, "m": halves, "w": ["a", "b"] * (ROWS // 2)})
    ip.user_ns["at"] = table
    shown = inspect(tools, "at")
    assert "pyarrow Table with 10,000,000 rows x 3 columns" in shown
    assert "m: int32, 5,000,000 null (50.00%)" in shown
    assert re.search(r"x: double, no nulls, 10,000 NaN", shown)
    assert "describe over an evenly spaced sample of 100,000 of 10,000,000 rows" in shown
    assert re.search(r"\n\s+1e-07\s+null\s+b\n", shown)  # the second head row
    batch = summarize(table.to_batches()[0].slice(0, 1000))
    assert "pyarrow RecordBatch with 1,000 rows x 3 columns" in batch
    assert "m: int32, 500 null (50.00%)" in batch
    chunked = summarize(table.column("x"))
    assert "pyarrow ChunkedArray, length 10,000,000, type double, 1 chunk" in chunked
    assert "first values: [nan, 1e-07, 2e-07" in chunked
    assert one_line(table) == "10000000 rows x 3 columns"


# --- torch ----------------------------------------------------------------------------------------


def test_a_big_cpu_tensor_shows_metadata_statistics_on_a_sample_and_a_corner() -> None:
    torch = pytest.importorskip("torch")
    tensor = torch.linspace(0, 1, ROWS).reshape(1000, 10_000)
    tensor[:, 0] = float("nan")
    shown = summarize(tensor)
    assert shown.startswith("Tensor shape=(1000, 10000) dtype=torch.float32 device=cpu requires_grad=False")
    assert "(38.1 MB)" in shown
    # every 100th column of all 1,000 rows: column 0, all NaN, is in the sample
    assert "1,000 NaN (on an evenly spaced sample of 100,000 of 10,000,000 elements)" in shown
    assert "values [:3, :3]:\ntensor([[       nan, 1.0000e-07, 2.0000e-07]," in shown
    assert one_line(tensor) == "shape=(1000, 10000) dtype=torch.float32 device=cpu"


def test_a_summary_records_nothing_into_autograd() -> None:
    torch = pytest.importorskip("torch")
    weight = torch.nn.Parameter(torch.arange(6.0).reshape(2, 3))
    scaled = weight * 2
    shown = summarize(scaled)
    assert "requires_grad=True (24 bytes), grad_fn=MulBackward0" in shown
    assert "mean 5, std 3.74166, min 0, 25% 2.5, 50% 5, 75% 7.5, max 10" in shown
    assert summarize(weight).startswith("Parameter shape=(2, 3)")
    # bfloat16 has no numpy dtype: torch computes the same statistics itself
    halves = summarize(torch.arange(0.0, 12.0, 2.0, dtype=torch.bfloat16))
    assert "0 NaN; mean 5, std 3.74166, min 0, 25% 2.5, 50% 5, 75% 7.5, max 10" in halves
    scaled.sum().backward()  # the graph is the user's alone: one backward, one gradient
    assert weight.grad is not None
    assert weight.grad.tolist() == [[2.0] * 3] * 2


def test_a_tensor_off_the_cpu_shows_no_values_and_is_never_read() -> None:
    """A ``meta`` tensor is a real non-CPU tensor without data: ``.cpu()``, ``.item()`` or a
    repr of its values would raise. The spy subclass records every torch function the summary
    calls on it: only metadata is read."""
    torch = pytest.importorskip("torch")

    class Spy(torch.Tensor):
        calls: list[str] = []

        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            cls.calls.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    huge = torch.empty(1_000_000_000, device="meta").as_subclass(Spy)
    shown = summarize(huge)
    assert shown.startswith("Spy shape=(1000000000,) dtype=torch.float32 device=meta")
    assert "values not shown: the tensor is on meta, and a summary never copies a tensor off" in shown
    assert "summary failed" not in shown
    read = {"cpu", "to", "item", "tolist", "numpy", "__repr__", "__getitem__", "reshape", "isnan"}
    assert Spy.calls
    assert read.isdisjoint(Spy.calls), Spy.calls
    assert "device=meta" in one_line(huge)


# --- xarray ---------------------------------------------------------------------------------------


class Exploding:
    """An array-like whose every read raises: what a lazy variable must never touch."""

    shape = (1000, 10_000)
    ndim = 2

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype

    def __getitem__(self, key: Any) -> Any:
        raise AssertionError("the summary read the lazy variable")


def test_xarray_in_memory_values_and_a_dask_variable_never_computed() -> None:
    xr = pytest.importorskip("xarray")
    np = pytest.importorskip("numpy")
    dask_array = pytest.importorskip("dask.array")
    pd = pytest.importorskip("pandas")
    temp = np.full((1000, 10_000), 280.0)
    temp[::2, :] = np.nan
    coords = {"time": pd.date_range("2020-01-01", periods=1000), "x": np.arange(10_000)}
    array = xr.DataArray(temp, dims=("time", "x"), coords=coords, name="temp", attrs={"units": "K"})
    lazy = dask_array.from_array(Exploding(np.dtype("float64")), chunks=(100, 10_000))
    dataset = xr.Dataset({"temp": array, "lazy": (("time", "x"), lazy)}, attrs={"title": "run 7"})
    shown = summarize(array)
    assert "xarray DataArray 'temp' (time: 1,000, x: 10,000) float64 (76.3 MB), in memory" in shown
    assert "x (x): int64, 0 .. 9999" in shown
    assert "units: K" in shown
    assert "50,000 NaN (on an evenly spaced sample of 100,000 of 10,000,000 values)" in shown
    whole = summarize(dataset)
    assert "xarray Dataset (time: 1,000, x: 10,000), 2 data variables, 2 coordinates" in whole
    assert "lazy (time, x): float64, lazy (dask, chunks (100, 10000)): not computed" in whole
    assert "title: run 7" in whole
    assert "not computed" in summarize(dataset["lazy"])
    assert one_line(dataset) == "(time: 1,000, x: 10,000), 2 data variables"
