"""The notebook tools in a real ipykernel (matplotlib's inline backend, ipykernel's display
publisher) and under nbclient: a figure ``run_code`` leaves open reaches the model and not the
``%%pi`` cell's output, a figure an earlier cell showed reaches ``read_cells``, and
``insert_cell`` in a headless run says it inserted nothing and shows the code."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from kernel_driver import KERNEL_NAME, SETUP, Kernel, Watch, write_kernelspec

pytestmark = pytest.mark.kernel
pytest.importorskip("matplotlib")


def pngs(watch: Watch) -> list[str]:
    return [kind for _, kind, content in watch.displays if "image/png" in content["data"]]


def test_a_figure_run_code_leaves_open_goes_to_the_model_not_the_cell(k: Kernel) -> None:
    assert "inline" in k.value("__import__('matplotlib').get_backend()")
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])"
    k.run(f"faux.set_responses([tool_use('run_code', {{'code': {code!r}}}, 'f1'), 'A zigzag.'])")
    cell = k.execute("%%pi --model faux:faux-1 --approve auto\nplot it")
    watch = Watch(k).until_replies([cell], timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert pngs(watch) == []  # the inline backend had nothing left to draw after the cell
    assert k.value("[b.type for b in _pi.messages[2].content]") == "['text', 'image']"
    assert k.value("__import__('matplotlib.pyplot').pyplot.get_fignums()") == "[]"


def test_read_cells_sees_the_figure_an_earlier_cell_showed(k: Kernel) -> None:
    shown = k.execute("import matplotlib.pyplot as plt\nplt.plot([4, 1, 3]);")
    watch = Watch(k).until_replies([shown], timeout=60)
    assert pngs(watch) == ["display_data"]  # the user saw the figure (inline backend, after the cell)
    k.run("faux.set_responses([tool_use('read_cells', {'last': 3}, 'r1'), 'I see it.'])")
    reply = k.run("%%pi --model faux:faux-1\nwhat did I plot?", timeout=60)
    assert reply["status"] == "ok"
    assert k.value("[b.type for b in _pi.messages[2].content]") == "['text', 'image']"
    assert "PNG, attached]" in k.value("_pi.messages[2].content[0].text")


def test_insert_cell_under_nbclient_inserts_nothing_and_shows_the_code(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    setup = SETUP.replace("tokens_per_second=40", "tokens_per_second=None") + (
        "faux.set_responses([tool_use('insert_cell', {'code': 'total = 40 + 2'}, 'i1'), 'Done.'])"
    )
    run = "%%pi --model faux:faux-1 --approve auto\nadd a cell"
    sources = [setup, run, "print(_pi.messages[2].content[0].text)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    nbclient.NotebookClient(nb, km=km, timeout=60).execute()
    assert len(nb.cells) == 3  # nbclient ignores the set_next_input payload
    told = nb.cells[2].outputs[0].text
    assert told.startswith("Not inserted: this headless run (nbclient, nbconvert, papermill or nbval)")
    assert "```python\ntotal = 40 + 2\n```" in told
    card = nb.cells[1].outputs[0].data
    assert "[tool] insert_cell (done)" in card["text/plain"]
    assert re.search(r"```python\n\s*total = 40 \+ 2\n\s*```", card["text/plain"])  # the code to copy
    assert "total = 40 + 2\n```</pre>" in card["text/html"]  # the card's result block, as the user sees it
