"""The cell rule as a function, and the router applied to IPython's transformers in a real
``InteractiveShell`` (only the kernel's own cell is routed)."""

from __future__ import annotations

import pytest

from pi_notebook.kernel.routing import CellRouter, classify, install_router


@pytest.mark.parametrize(
    ("cell", "kind"),
    [
        ("%%python\nx = 1", "python"),
        ("%%python   \nx = 1", "python"),
        ("%%python", "python"),
        ("\n%%python\nx = 1", "ipython"),  # not the first line: IPython's own %%python magic
        ("%%pythonx\n1", "ipython"),
        ("%timeit x", "ipython"),
        ("\n\n   %pi resume", "ipython"),
        ("!pip install x", "ipython"),
        ("%%pi --model faux:faux-1\nhello", "ipython"),  # the %%pi transformer takes it
        ("what is 100% of x?", "prompt"),
        ("look at !this", "prompt"),
        ("# a comment only", "prompt"),
        ("# a heading\n%%pi --model x\nhi", "prompt"),  # the first non-blank line decides
        ("print(1)", "prompt"),  # code without %%python is a prompt too: no guessing
        # papermill's injected parameters cell, and a notebook's own parameters cell
        ("# Parameters\nalpha = 2\n", "python"),
        ('# Parameters  \nalpha = 2\nname = "x"\nrates = [\n    1,\n    2,\n]\n', "python"),
        ("# Parameters\n\n# the learning rate\nalpha: float = 0.1\nbeta = gamma = None", "python"),
        ("# Parameters", "prompt"),  # nothing assigned: a heading of a prompt
        ("# Parameters\nalpha = 2 is the learning rate; explain it", "prompt"),  # prose
        ("# Parameters\nalpha = 2\nprint(alpha)", "prompt"),  # not only assignments
        ("# Parameters\nalpha += 2", "prompt"),
        ("# parameters\nalpha = 2", "prompt"),  # papermill writes exactly '# Parameters'
        ("\n# Parameters\nalpha = 2", "prompt"),  # not the first line
        ("alpha = 2", "prompt"),
        ("", "empty"),
        ("\n  \n\t\n", "empty"),
    ],
)
def test_classify(cell: str, kind: str) -> None:
    assert classify(cell) == kind


def test_only_the_current_cell_is_routed_and_ipython_still_transforms_it() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell()
    router = install_router(shell)
    assert install_router(shell) is not router  # a second install replaces the first
    router = install_router(shell)
    assert [t for t in shell.input_transformers_cleanup if isinstance(t, CellRouter)] == [router]
    # not the kernel's cell: IPython's own %%python magic, as in any kernel
    assert (
        shell.transform_cell("%%python\nx = 1") == "get_ipython().run_cell_magic('python', '', 'x = 1\\n')\n"
    )
    router.current = "%%python\n%time x = 1"
    assert shell.transform_cell(router.current) == "get_ipython().run_line_magic('time', 'x = 1')\n"
    router.current = "hello there"
    assert shell.transform_cell("hello there").startswith("get_ipython().run_cell_magic('pi', '', ")
    assert shell.transform_cell("y = 2") == "y = 2\n"  # code that is not the cell runs as Python
    router.current = "# Parameters\nalpha = 2\n"
    assert shell.transform_cell(router.current) == router.current  # runs as written
