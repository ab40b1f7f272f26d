"""``tmpfs``: a fixture that mounts a small tmpfs for the disk-full and read-only tests, where
the machine lets this process mount one (root with ``mount``); the test is skipped otherwise.
Every mount is undone after the test (lazily, so a file left open cannot make it hang)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Mount = Callable[[str], Path]


def _mount(target: Path, options: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    target.mkdir(parents=True, exist_ok=True)
    command = ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)]
    done = subprocess.run(command, check=False, capture_output=True, timeout=10)
    return done.returncode == 0


@pytest.fixture(name="tmpfs")
def tmpfs_fixture(tmp_path: Path) -> Iterator[Mount]:
    """``tmpfs("size=64k")`` mounts a tmpfs at a fresh folder and returns it."""
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        target = tmp_path / f"mnt{len(mounted)}"
        if not _mount(target, options):
            pytest.skip("cannot mount a tmpfs here (needs root and mount)")
        mounted.append(target)
        return target

    try:
        yield mount
    finally:
        for target in mounted:
            subprocess.run(["umount", "-l", str(target)], check=False, capture_output=True, timeout=10)


def remount_read_only(target: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(target)], check=True, capture_output=True, timeout=10)


def fill(disk: Path) -> None:
    """Write until the file system is full (ENOSPC)."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    error: OSError | None = None
    try:
        for _ in range(1 << 14):  # 16 MiB at most
            os.write(fd, b"x" * 1024)
    except OSError as exc:
        error = exc
    finally:
        os.close(fd)
    assert error is not None
    assert error.errno == 28
