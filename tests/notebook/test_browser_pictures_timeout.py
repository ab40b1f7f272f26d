"""JupyterLab and Notebook 7 in Debian's Chromium (issue 31): `` $`fig` `` reaches a vision
model as an image and a text-only model as text (the request bodies a loopback server got); a ``run_code`` of
``time.sleep(60)`` under ``--code-timeout`` shows "Still running" with the elapsed time and
the last printed line on its card, is interrupted at the limit, the run answers and the kernel
stays usable. Never downloads a browser: it launches ``/usr/bin/chromium`` and is skipped
without it. Screenshots of a failure go to ``test-output/browser/pictures-*.png``."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import CHROMIUM, Lab, chromium_page
from loopback import LoopbackServer, Reply, serving
from test_browser import run_cell
from test_browser_notebook7 import _run_first_cell
from test_run_retry import chat_reply, chat_requests

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

SETUP = r"""
%load_ext pi_notebook
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from pi_notebook.ai.models import openai_compatible_model
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
openai_compatible_model("seer", URL, provider="pics", images=True)
openai_compatible_model("reader", URL, provider="pics", images=False)
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([1, 3, 2])
plt.close(fig)
SLEEPER = "import time\nprint('epoch 1')\ntime.sleep(60)"
faux = register_faux_provider()
faux.set_responses([
    faux_assistant_message([faux_tool_call("run_code", {"code": SLEEPER}, id="t1")], stop_reason="toolUse"),
    faux_assistant_message("It timed out; I will train on a sample."),
])
print("setup done")
"""
SEER = "%%pi --model pics:seer --new\nWhat does $`fig` show?"
READER = "%%pi --model pics:reader --new\nWhat does $`fig` show?"
TRAIN = "%%pi --model faux:faux-1 --new --approve auto --code-timeout 6\nTrain the model."
AFTER = "print('usable', 1 + 1)"


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_pictures_and_a_code_time_limit(tmp_path: Path, app: str) -> None:
    """In JupyterLab and in Notebook 7."""
    expect = playwright_sync.expect
    with (
        serving(LoopbackServer()) as server,
        Lab(tmp_path, app=app) as lab,
        playwright_sync.sync_playwright() as p,
    ):
        server.queue(Reply(parts=chat_reply("A rising then falling line.")))
        server.queue(Reply(parts=chat_reply("I only read its summary.")))
        setup = f"URL = {server.url!r}\n" + SETUP
        url = lab.write_notebook("pictures.ipynb", [setup, SEER, READER, TRAIN, AFTER])
        with chromium_page(p, lab, f"pictures-{app}-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            if app == "lab":
                page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
                run_cell(page, cells.nth(0))
            else:  # Notebook 7 has no kernel status in a status bar
                _run_first_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-Cell-outputArea")).to_contain_text("setup done", timeout=60_000)

            run_cell(page, cells.nth(1))
            expect(cells.nth(1).locator(".jp-Cell-outputArea")).to_contain_text(
                "A rising then falling", timeout=60_000
            )
            run_cell(page, cells.nth(2))
            expect(cells.nth(2).locator(".jp-Cell-outputArea")).to_contain_text(
                "only read its summary", timeout=60_000
            )
            seer, reader = (r.json["messages"][-1]["content"] for r in chat_requests(server))
            assert [part["type"] for part in seer] == ["text", "text", "image_url"]
            assert seer[2]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
            assert [part["type"] for part in reader] == ["text", "text"]
            assert "not sent to the model: it has no image input" in reader[1]["text"]

            started = time.monotonic()
            run_cell(page, cells.nth(3))
            output = cells.nth(3).locator(".jp-Cell-outputArea")
            still = re.compile(r"Still running: \d s of its 6 s limit · last printed: epoch 1")
            expect(output).to_contain_text(still, timeout=30_000)
            expect(output).to_contain_text("It timed out; I will train on a sample.", timeout=30_000)
            assert time.monotonic() - started < 30  # not the minute of the sleep
            expect(output).to_contain_text("interrupted at its time limit of 6 s")
            run_cell(page, cells.nth(4))
            expect(cells.nth(4).locator(".jp-Cell-outputArea")).to_contain_text("usable 2", timeout=30_000)
