"""Where extensions come from: a real package installed with pip (its entry point of group
``pi_notebook.extensions``), a project's ``.pi/extensions`` (only when trusted), a file, a
module; and what a broken one does (one line, the others still load)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_notebook.runtime.extensions import ExtensionRunner, discover_extensions, load_extension

EXTENSION = """
def setup(pi):
    pi.register_command("hello", lambda args, ctx: print("hello from the package", args))
    pi.on("input", lambda event: None)
"""


@pytest.fixture(scope="module")
def installed_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``pi-hello`` built from a pyproject.toml and installed with pip into a folder on
    ``sys.path`` (offline: no build isolation, no dependencies)."""
    root = tmp_path_factory.mktemp("pkg")
    source = root / "src"
    (source / "pi_hello").mkdir(parents=True)
    (source / "pi_hello" / "__init__.py").write_text(EXTENSION)
    (source / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "pi-hello"
        version = "0.1.0"

        [project.entry-points."pi_notebook.extensions"]
        hello = "pi_hello:setup"

        [tool.setuptools]
        packages = ["pi_hello"]
    """)
    )
    target = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        cwd=root,
        timeout=120,
    )
    sys.path.insert(0, str(target))
    try:
        yield target
    finally:
        sys.path.remove(str(target))
        for name in [n for n in sys.modules if n == "pi_hello" or n.startswith("pi_hello.")]:
            del sys.modules[name]


async def test_an_installed_package_is_found_by_its_entry_point(
    installed_package: Path, tmp_path: Path
) -> None:
    assert (installed_package / "pi_hello-0.1.0.dist-info" / "entry_points.txt").is_file()
    runner = ExtensionRunner()
    found = await discover_extensions(runner, tmp_path)
    [extension] = [e for e in found.loaded if e.name.startswith("hello")]
    assert extension.name == "hello = pi_hello:setup"
    assert extension.source == "entry_point"
    assert list(runner.commands()) == ["hello"]
    again = await discover_extensions(runner, tmp_path)  # already loaded: not twice
    assert again.loaded == []
    assert len(runner.extensions) == 1


def _project(tmp_path: Path) -> Path:
    folder = tmp_path / "project" / ".pi" / "extensions"
    folder.mkdir(parents=True)
    (folder / "a_tools.py").write_text("def setup(pi):\n    pi.register_command('a', lambda a, c: None)\n")
    (folder / "b_broken.py").write_text("raise ImportError('needs the warehouse client')\n")
    package = folder / "c_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .impl import setup\n")
    (package / "impl.py").write_text("def setup(pi):\n    pi.register_command('c', lambda a, c: None)\n")
    (folder / "notes.txt").write_text("not an extension")
    return tmp_path / "project"


async def test_project_extensions_load_only_when_trusted(tmp_path: Path) -> None:
    project = _project(tmp_path)
    runner = ExtensionRunner()
    untrusted = await discover_extensions(runner, project, entry_point_group="pi_notebook.none")
    assert untrusted.loaded == []
    assert runner.extensions == []
    assert len(untrusted.skipped) == 3
    assert "is not trusted" in untrusted.skipped[0]
    asked: list[Path] = []

    def trusted(folder: Path) -> bool:
        asked.append(folder)
        return True

    found = await discover_extensions(
        runner, project, project_trusted=trusted, entry_point_group="pi_notebook.none"
    )
    assert asked == [project.resolve()]
    assert [e.source for e in found.loaded] == ["project", "project"]
    assert sorted(runner.commands()) == ["a", "c"]
    [error] = runner.errors  # the broken file: one line, the others loaded
    assert error.line().endswith("b_broken.py failed in load: ImportError: needs the warehouse client")


async def test_load_a_file_or_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.py").write_text("def setup(pi):\n    pi.register_command('m', lambda a, c: None)\n")
    (tmp_path / "other_ext.py").write_text(
        "def install(pi):\n    pi.register_command('o', lambda a, c: None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = ExtensionRunner()
    by_path = await load_extension(runner, "mine.py", cwd=tmp_path)
    by_module = await load_extension(runner, "other_ext:install")
    assert by_path is not None
    assert by_path.name == str(tmp_path / "mine.py")
    assert by_module is not None
    assert by_module.name == "other_ext:install"
    assert sorted(runner.commands()) == ["m", "o"]
    assert await load_extension(runner, "other_ext") is None  # no setup() in it
    assert runner.errors[-1].line() == (
        "Extension other_ext failed in load: AttributeError: other_ext has no function setup(pi): "
        "define def setup(pi): ..."
    )
    assert await load_extension(runner, "missing.py", cwd=tmp_path) is None
    assert "FileNotFoundError: no extension file" in runner.errors[-1].line()
