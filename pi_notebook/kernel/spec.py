"""The Pi kernelspec: what ``kernel.json`` says, and installing or removing it.

The spec starts the interpreter that installed it, with a short bootstrap instead of ``-m``: when
that interpreter cannot import the package (another venv, an uninstalled copy), the kernel exits
at start with one line naming the interpreter and what to do, which the Jupyter server logs and
``jupyter console`` prints; ``-m`` would only say "No module named pi_notebook".

The same two files (``write_spec``) are what the wheel ships in its data files, as ipykernel
ships ``python3``: there ``argv[0]`` is ``python``, which ``jupyter_client`` replaces with the
interpreter of the environment that launches it (``hatch_build.py`` at the repository root
loads this module by path, so it imports nothing outside the standard library at module level).

Locations follow ``python -m ipykernel install``: ``--user`` (the user's Jupyter data dir),
``--sys-prefix`` (this environment, where a venv's JupyterLab finds it), ``--prefix PATH``, else
the system-wide dir. A location that cannot be written is a ``SpecError`` with one line.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DISPLAY_NAME",
    "KERNEL_NAME",
    "Location",
    "SpecError",
    "install",
    "kernel_json",
    "uninstall",
    "write_spec",
]

KERNEL_NAME = "pi"
DISPLAY_NAME = "Pi (Python 3)"
MARKER = "pi_notebook.kernel.app"
"""The module the bootstrap starts; ``uninstall`` removes only specs that name it."""

BOOTSTRAP = f"""\
import sys
if sys.path and sys.path[0] == '':
    del sys.path[0]  # the kernel puts the working directory back once it has started
try:
    from {MARKER} import main
except ImportError as exc:
    sys.exit(f'Pi kernel: the interpreter {{sys.executable}} cannot start it ({{exc}}). '
             f'Install pi-notebook there ({{sys.executable}} -m pip install pi-notebook), or '
             'reinstall the kernelspec from a Python that has it: python -m pi_notebook.kernel install')
main()
"""

LOGO = """\
<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">
<rect width="64" height="64" rx="12" fill="#8b7cf6"/>
<path d="M14 20h36M25 20v28M40 20c0 10-1 22 6 28" stroke="#fff" stroke-width="6"
 stroke-linecap="round" fill="none"/>
</svg>
"""


class SpecError(Exception):
    """A kernelspec could not be written or removed; the message is one line saying why and
    what to do."""


@dataclass(frozen=True, slots=True)
class Location:
    """Where a kernelspec goes: ``user``, a ``prefix``, or neither (system-wide)."""

    user: bool = False
    prefix: str | None = None

    def kernels_dir(self) -> Path:
        from jupyter_client.kernelspec import KernelSpecManager

        probe = KernelSpecManager()._get_destination_dir("x", user=self.user, prefix=self.prefix)
        return Path(probe).parent

    def describe(self) -> str:
        if self.user:
            return "--user"
        return f"--prefix {self.prefix}" if self.prefix else "the system-wide Jupyter dir"


def kernel_json(display_name: str = DISPLAY_NAME, python: str | None = None) -> dict[str, object]:
    """The ``kernel.json`` of a Pi kernel run by ``python`` (default: this interpreter)."""
    return {
        "argv": [python or sys.executable, "-c", BOOTSTRAP, "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }


def write_spec(directory: Path, display_name: str = DISPLAY_NAME, python: str | None = None) -> None:
    """Write the kernelspec's files (``kernel.json`` and its logo) into ``directory``, which
    must exist: what ``install`` copies into a Jupyter data dir and the wheel ships."""
    spec = json.dumps(kernel_json(display_name, python), indent=1)
    (directory / "kernel.json").write_text(spec + "\n", "utf-8")
    (directory / "logo-svg.svg").write_text(LOGO, "utf-8")


def _where(exc: OSError) -> str:
    return f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)


def install(
    location: Location,
    name: str = KERNEL_NAME,
    display_name: str = DISPLAY_NAME,
    python: str | None = None,
) -> Path:
    """Write the kernelspec ``name`` into ``location`` (replacing one of that name); returns its
    directory. ``SpecError`` when the name is invalid or the location cannot be written."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory(prefix="pi-kernelspec-") as source:
        write_spec(Path(source), display_name, python)
        try:
            target = KernelSpecManager().install_kernel_spec(
                source, kernel_name=name, user=location.user, prefix=location.prefix
            )
        except ValueError as exc:  # an invalid kernel name
            raise SpecError(f"{exc} Pass another --name.") from None
        except OSError as exc:
            raise SpecError(
                f"cannot write the kernelspec {name!r} into {location.describe()} ({_where(exc)}); "
                "choose a location you can write: --user, --sys-prefix or --prefix PATH"
            ) from None
    return Path(target)


def _find(name: str) -> Path:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        return Path(KernelSpecManager().get_kernel_spec(name).resource_dir)
    except NoSuchKernel:
        raise SpecError(
            f"no kernelspec {name!r} on the Jupyter path (see `jupyter kernelspec list`); "
            "pass --user, --sys-prefix or --prefix PATH for one installed there"
        ) from None


def uninstall(location: Location | None, name: str = KERNEL_NAME) -> Path:
    """Remove the Pi kernelspec ``name`` from ``location`` (``None``: the one Jupyter finds);
    returns the removed directory. A spec of that name that is not a Pi kernel is left alone."""
    target = _find(name) if location is None else location.kernels_dir() / name.lower()
    spec_file = target / "kernel.json"
    try:
        argv = json.loads(spec_file.read_text("utf-8")).get("argv", [])
    except FileNotFoundError:
        raise SpecError(f"no kernelspec {name!r} in {target.parent}; nothing to remove") from None
    except (OSError, ValueError) as exc:
        raise SpecError(
            f"cannot read {spec_file} ({exc}); remove it with `jupyter kernelspec remove`"
        ) from None
    if not any(MARKER in str(arg) for arg in argv):
        raise SpecError(
            f"{target} is not a Pi kernel; remove it with `jupyter kernelspec remove {name}` if you mean to"
        )
    try:
        if os.path.islink(target):
            os.remove(target)
        else:
            shutil.rmtree(target)
    except OSError as exc:
        raise SpecError(f"cannot remove {target} ({_where(exc)})") from None
    return target
