"""Bounded summaries of xarray ``DataArray`` and ``Dataset``: dimensions, coordinates, data
variables, attributes, and for data held in memory NaN counts, statistics and a few values.

xarray is reached through ``sys.modules``, never imported. A variable whose data is not in
memory (a dask array, or a file opened with ``open_dataset`` and not loaded yet) is never
loaded or computed: it shows its dims, dtype and chunks and says so, because reading its
``values`` would compute the dask graph or read the file. NaNs and statistics of a large
in-memory array are computed on an evenly spaced sample of at most ``SAMPLE_ROWS`` elements,
named in the text.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from .common import COUNT_BUDGET_S, SAMPLE_ROWS, Budget, fmt, human_bytes, numpy_stats, strided_sample

MAX_ITEMS = 40  # coordinates, data variables or attributes listed
ATTR_CHARS = 80


def kind(value: Any) -> str | None:
    xarray = sys.modules["xarray"]
    if isinstance(value, xarray.DataArray):
        return "DataArray"
    if isinstance(value, xarray.Dataset):
        return "Dataset"
    return None


def summarize(kind: str, value: Any, limit: int) -> str:
    text = summarize_array(value) if kind == "DataArray" else summarize_dataset(value)
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def one_line(kind: str, value: Any) -> str:
    if kind == "DataArray":
        return f"{value.name!r} ({_dims(value.sizes)}) {value.dtype}"
    return f"({_dims(value.sizes)}), {len(value.data_vars)} data variables"


def _dims(sizes: Any) -> str:
    return ", ".join(f"{name}: {size:,}" for name, size in sizes.items())


def _in_memory(variable: Any) -> bool:
    # xarray's own test for "reading .values costs nothing" (a numpy array, or a loaded cache);
    # there is no public one. If a release drops it, nothing is read rather than too much.
    return bool(getattr(variable, "_in_memory", False))


def _where(variable: Any) -> str:
    if _in_memory(variable):
        return "in memory"
    if variable.chunks is not None:
        chunks = ", ".join(str(c[0]) if len(set(c)) == 1 else f"{c[0]}.." for c in variable.chunks)
        return f"lazy (dask, chunks ({chunks})): not computed"
    return "not loaded (backed by a file or another lazy array): not read"


def _nan_and_stats(variable: Any) -> list[str]:
    numpy = sys.modules["numpy"]
    data = variable.values
    if data.dtype.kind not in "iuf" or data.size == 0:
        return []
    sampled = data.size > SAMPLE_ROWS * 10
    values = (strided_sample(data) if sampled else data).astype("float64").ravel()
    nans = int(numpy.count_nonzero(numpy.isnan(values)))
    where = f" (on an evenly spaced sample of {values.size:,} of {data.size:,} values)" if sampled else ""
    count, mean, std, low, *_, high = numpy_stats(values)
    return [f"{nans:,} NaN{where}; count {count}, mean {mean}, std {std}, min {low}, max {high}"]


def _coordinates(obj: Any) -> list[str]:
    lines = []
    for name, coord in list(obj.coords.items())[:MAX_ITEMS]:
        line = f"  {name} ({', '.join(map(str, coord.dims))}): {coord.dtype}"
        if _in_memory(coord.variable) and coord.ndim == 1 and coord.size:
            first, last = coord[0].values, coord[-1].values  # not .values[0]: that converts the index
            line += f", {fmt_value(first)} .. {fmt_value(last)}"
        lines.append(line)
    if len(obj.coords) > MAX_ITEMS:
        lines.append(f"  ... {len(obj.coords) - MAX_ITEMS} more coordinates")
    return lines


def fmt_value(value: Any) -> str:
    return fmt(value) if isinstance(value, float) else str(value)[:40]


def _attributes(attrs: Any) -> list[str]:
    lines = [f"  {key}: {str(value)[:ATTR_CHARS]}" for key, value in list(attrs.items())[:MAX_ITEMS]]
    if len(attrs) > MAX_ITEMS:
        lines.append(f"  ... {len(attrs) - MAX_ITEMS} more attributes")
    return lines


def _section(title: str, lines: list[str]) -> list[str]:
    return [title, *lines] if lines else []


def _corner(values: Any) -> list[str]:
    if not values.ndim:
        return [f"value: {values.item()!r}"]
    corner = values[(slice(0, 3),) * values.ndim]
    text = sys.modules["numpy"].array2string(corner, threshold=40, edgeitems=3, max_line_width=100)
    return ["values [" + ", ".join([":3"] * values.ndim) + "]:", text]


def summarize_array(array: Any) -> str:
    variable = array.variable
    size = human_bytes(float(math.prod(array.shape) * array.dtype.itemsize))
    lines = [f"xarray DataArray {array.name!r} ({_dims(array.sizes)}) {array.dtype} ({size})"]
    lines[0] += f", {_where(variable)}"
    lines += _section("coordinates:", _coordinates(array))
    lines += _section("attributes:", _attributes(array.attrs))
    if _in_memory(variable):
        lines += _nan_and_stats(variable)
        lines += _corner(array.values)
    return "\n".join(lines)


def summarize_dataset(dataset: Any) -> str:
    size = human_bytes(float(sum(math.prod(v.shape) * v.dtype.itemsize for v in dataset.variables.values())))
    count = len(dataset.data_vars)
    coords = len(dataset.coords)
    lines = [f"xarray Dataset ({_dims(dataset.sizes)}), {count} data variables, {coords} coordinates"]
    lines[0] += f" ({size})"
    lines += _section("coordinates:", _coordinates(dataset))
    variables = []
    budget = Budget(COUNT_BUDGET_S)
    for name, array in list(dataset.data_vars.items())[:MAX_ITEMS]:
        variable = array.variable
        line = f"  {name} ({', '.join(map(str, array.dims))}): {array.dtype}, {_where(variable)}"
        if _in_memory(variable) and budget.affords(0):
            line += "".join(f"; {stat}" for stat in _nan_and_stats(variable))
        elif _in_memory(variable):
            line += "; statistics skipped (the summary's time budget was spent on the variables above)"
        variables.append(line)
    if count > MAX_ITEMS:
        variables.append(f"  ... {count - MAX_ITEMS} more data variables")
    lines += _section("data variables (dims: dtype, where, NaN, statistics):", variables)
    lines += _section("attributes:", _attributes(dataset.attrs))
    return "\n".join(lines)
