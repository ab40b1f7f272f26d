"""Bounded summaries of torch tensors (``Tensor``, ``nn.Parameter`` and other subclasses).

torch is reached through ``sys.modules``, never imported. Every tensor shows its shape, dtype,
device, ``requires_grad``, ``grad_fn`` and size in bytes, all read from the tensor's metadata.

Values and statistics are read only from a dense tensor in CPU memory, under ``no_grad`` and
on a ``detach()``ed view, so a summary neither records into the autograd graph nor keeps the
graph alive. A tensor on any other device (``cuda``, ``mps``, ``xpu``, ``meta``, ...) shows no
values at all: reading even one would copy it to the CPU and wait for the device's queue, and
the text says so. Above ``SMALL_TENSOR`` elements, NaNs and statistics are computed on an
evenly spaced sample of at most ``SAMPLE_ROWS`` elements, named in the text.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import QUANTILES, STAT_NAMES, fmt, guarded, human_bytes, numpy_stats, strided_sample

SMALL_TENSOR = 1_000_000
CORNER = 3  # the first CORNER indices of each dimension are shown


def kind(value: Any) -> str | None:
    return "Tensor" if isinstance(value, sys.modules["torch"].Tensor) else None


def summarize(kind: str, value: Any, limit: int) -> str:
    return summarize_tensor(value, limit)


def one_line(kind: str, value: Any) -> str:
    return f"shape={tuple(value.shape)} dtype={value.dtype} device={value.device}"


def _header(tensor: Any) -> str:
    shape = tuple(tensor.shape)
    size = human_bytes(float(tensor.numel() * tensor.element_size()))
    if tensor.layout != sys.modules["torch"].strided or tensor.device.type == "meta":
        size += " if dense" if tensor.device.type != "meta" else ", a meta tensor holds no data"
    line = f"{type(tensor).__name__} shape={shape} dtype={tensor.dtype} device={tensor.device}"
    line += f" requires_grad={tensor.requires_grad} ({size})"
    if tensor.grad_fn is not None:
        line += f", grad_fn={type(tensor.grad_fn).__name__}"
    return line


def _why_no_values(tensor: Any) -> str | None:
    torch = sys.modules["torch"]
    if tensor.device.type != "cpu":
        return (
            f"values not shown: the tensor is on {tensor.device}, and a summary never copies a tensor off "
            "its device (run_code with e.g. t[:3].cpu() shows some)"
        )
    if tensor.layout != torch.strided:
        return f"values not shown: layout {tensor.layout}"
    if tensor.is_quantized:
        return "values not shown: a quantized tensor"
    return None


def _stats(tensor: Any) -> list[str]:
    torch = sys.modules["torch"]
    dtype = tensor.dtype
    if dtype.is_complex or dtype == torch.bool or tensor.numel() == 0:
        return []
    sampled = tensor.numel() > SMALL_TENSOR
    view = strided_sample(tensor) if sampled else tensor
    nans, (count, mean, std, low, *quartiles, high) = _numbers(view)
    where = f" (on an evenly spaced sample of {view.numel():,} of {tensor.numel():,} elements)"
    where = where if sampled else ""
    if count == "0":
        return [f"{nans:,} NaN, no other values{where}"]
    shown = ", ".join(f"{n} {v}" for n, v in zip(STAT_NAMES[3:], [low, *quartiles, high], strict=True))
    counted = f"{nans:,} NaN" if dtype.is_floating_point else "statistics"
    return [f"{counted}{where}; mean {mean}, std {std}, {shown}"]


def _numbers(view: Any) -> tuple[int, list[str]]:
    """The NaNs and the ``STAT_NAMES`` of the other values of a CPU tensor. With numpy loaded,
    numpy computes them on the tensor's memory (``.numpy()`` shares it): torch's intra-op
    threads make each small op cost milliseconds on a loaded machine, numpy's microseconds."""
    numpy = sys.modules.get("numpy")
    torch = sys.modules["torch"]
    if numpy is not None and view.dtype != torch.bfloat16:
        values = view.numpy().astype("float64").ravel()
        return int(numpy.count_nonzero(numpy.isnan(values))), numpy_stats(values)
    values = view.reshape(-1).double()
    valid = values[~torch.isnan(values)]
    nans = values.numel() - valid.numel()
    if not valid.numel():
        return nans, ["0", *["nan"] * 7]
    std = valid.std().item() if valid.numel() > 1 else float("nan")
    stats = [valid.mean().item(), std, valid.min().item(), *(_quantile(valid, q) for q in QUANTILES)]
    return nans, [f"{valid.numel():,}", *(fmt(v) for v in [*stats, valid.max().item()])]


def _quantile(values: Any, q: float) -> float:
    """The linear-interpolation quantile, from ``kthvalue`` selections (``torch.quantile``
    sorts, several times slower)."""
    position = q * (values.numel() - 1)
    low = int(position)
    below = float(values.kthvalue(low + 1).values)
    if position == low:
        return below
    above = float(values.kthvalue(low + 2).values)
    return float(below + (above - below) * (position - low))


def _corner(tensor: Any) -> str:
    if tensor.dim() == 0:
        return f"value: {tensor.item()!r}"
    corner = tensor[(slice(0, CORNER),) * tensor.dim()]
    label = ", ".join(f":{CORNER}" for _ in range(tensor.dim()))
    return f"values [{label}]:\n{corner!r}"


def summarize_tensor(tensor: Any, limit: int) -> str:
    torch = sys.modules["torch"]
    lines = [_header(tensor)]
    why = _why_no_values(tensor)
    if why is not None:
        lines.append(why)
    else:
        with torch.no_grad():
            plain = tensor.detach()
            lines += [line for line in guarded(_stats, plain) if line]
            lines.append(_corner(plain))
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"
