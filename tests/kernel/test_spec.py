"""The kernelspec from the command line: ``python -m pi_notebook.kernel install | uninstall`` in
a subprocess, found by ``jupyter kernelspec list`` through ``JUPYTER_PATH``, and a spec whose
interpreter lacks the package failing at start with one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from pi_notebook.kernel.__main__ import location, parser
from pi_notebook.kernel.spec import DISPLAY_NAME, Location, install

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pi_notebook.kernel", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=full,
        check=False,
    )


def listed(jupyter_path: Path, env: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    """``jupyter kernelspec list --json`` with ``jupyter_path`` on ``JUPYTER_PATH``."""
    full = {**os.environ, "JUPYTER_PATH": str(jupyter_path), **(env or {})}
    out = subprocess.run(
        [sys.executable, "-m", "jupyter_client.kernelspecapp", "list", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=full,
        check=True,
    )
    specs: dict[str, dict[str, object]] = json.loads(out.stdout)["kernelspecs"]
    return specs


def test_install_into_a_prefix_is_found_through_jupyter_path(tmp_path: Path) -> None:
    done = cli("install", "--prefix", str(tmp_path))
    assert done.returncode == 0, done.stderr
    target = tmp_path / "share" / "jupyter" / "kernels" / "pi"
    assert done.stdout.strip() == f"Installed kernelspec pi ({DISPLAY_NAME}) in {target}"
    spec = listed(tmp_path / "share" / "jupyter")["pi"]
    assert spec["resource_dir"] == str(target)
    body = spec["spec"]
    assert isinstance(body, dict)
    assert body["display_name"] == "Pi (Python 3)"
    assert body["language"] == "python"
    assert body["argv"][0] == sys.executable  # the interpreter that installed it
    assert body["argv"][-2:] == ["-f", "{connection_file}"]
    assert (target / "logo-svg.svg").read_text().startswith("<svg")


def test_name_and_display_name_and_reinstall_replaces(tmp_path: Path) -> None:
    assert (
        cli("install", "--prefix", str(tmp_path), "--name", "pi-dev", "--display-name", "Pi dev").returncode
        == 0
    )
    assert (
        cli("install", "--prefix", str(tmp_path), "--name", "pi-dev", "--display-name", "Pi 2").returncode
        == 0
    )
    spec = listed(tmp_path / "share" / "jupyter")["pi-dev"]["spec"]
    assert isinstance(spec, dict)
    assert spec["display_name"] == "Pi 2"


def test_user_install_goes_to_the_user_data_dir_and_uninstall_removes_it(tmp_path: Path) -> None:
    env = {"JUPYTER_DATA_DIR": str(tmp_path / "data")}
    assert cli("install", "--user", env=env).returncode == 0
    assert (tmp_path / "data" / "kernels" / "pi" / "kernel.json").is_file()
    done = cli("uninstall", "--user", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Removed kernelspec pi from {tmp_path / 'data' / 'kernels' / 'pi'}"
    assert not (tmp_path / "data" / "kernels" / "pi").exists()
    again = cli("uninstall", "--user", env=env)
    assert again.returncode == 1
    assert again.stderr.strip() == (
        f"error: no kernelspec 'pi' in {tmp_path / 'data' / 'kernels'}; nothing to remove"
    )


def test_uninstall_without_a_location_removes_the_one_jupyter_finds(tmp_path: Path) -> None:
    assert cli("install", "--prefix", str(tmp_path), "--name", "pi-found").returncode == 0
    done = cli("uninstall", "--name", "pi-found", env={"JUPYTER_PATH": str(tmp_path / "share" / "jupyter")})
    assert done.returncode == 0, done.stderr
    assert "pi-found" not in listed(tmp_path / "share" / "jupyter")


def test_uninstall_leaves_a_kernel_that_is_not_pi_alone(tmp_path: Path) -> None:
    other = tmp_path / "share" / "jupyter" / "kernels" / "pi"
    other.mkdir(parents=True)
    (other / "kernel.json").write_text(json.dumps({"argv": ["python", "-m", "ipykernel_launcher"]}))
    done = cli("uninstall", "--prefix", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "is not a Pi kernel" in done.stderr
    assert (other / "kernel.json").is_file()


def test_a_prefix_that_cannot_be_written_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done = cli("install", "--prefix", str(blocker / "env"))
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    assert done.stderr.startswith(f"error: cannot write the kernelspec 'pi' into --prefix {blocker / 'env'}")
    assert "choose a location you can write: --user, --sys-prefix or --prefix PATH" in done.stderr


def test_an_invalid_name_is_a_one_line_error(tmp_path: Path) -> None:
    done = cli("install", "--prefix", str(tmp_path), "--name", "pi kernel")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "Invalid kernel name 'pi kernel'" in done.stderr
    assert done.stderr.rstrip().endswith("Pass another --name.")


def test_locations_from_the_flags() -> None:
    def where(*args: str) -> Location | None:
        return location(parser().parse_args(["install", *args]))

    assert where("--sys-prefix") == Location(prefix=sys.prefix)
    assert where("--user") == Location(user=True)
    assert where("--prefix", "/opt/x") == Location(prefix="/opt/x")
    assert where() is None
    with pytest.raises(SystemExit):
        where("--user", "--sys-prefix")


@pytest.mark.kernel
def test_an_interpreter_without_the_package_fails_at_start_naming_itself(tmp_path: Path) -> None:
    bare = "/usr/bin/python3"  # Debian's Python: no pi_notebook once PYTHONPATH is gone
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not os.path.exists(bare):
        pytest.skip(f"{bare} is missing")
    probe = subprocess.run(
        [bare, "-c", "import pi_notebook"], capture_output=True, env=env, cwd=tmp_path, check=False,
        timeout=60,
    )
    assert probe.returncode != 0, f"{bare} has pi_notebook: the test needs an interpreter without it"
    install(Location(prefix=str(tmp_path)), name="pi-bare", python=bare)
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "share" / "jupyter" / "kernels")])
    km = KernelManager(kernel_name="pi-bare", kernel_spec_manager=specs)
    km.connection_file = str(tmp_path / "connection.json")
    km.start_kernel(env=env, cwd=str(tmp_path), stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        process = km.provisioner.process  # type: ignore[union-attr]
        process.wait(timeout=30)
        stderr = process.stderr.read()
    finally:
        km.cleanup_resources()
    assert process.returncode == 1
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"Pi kernel: the interpreter {bare} cannot start it (No module named 'pi_notebook')"
    )
    assert "python -m pi_notebook.kernel install" in lines[0]
