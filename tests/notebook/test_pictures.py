"""Pictures as context: `` $`fig` `` sends a figure, a PIL image, an IPython ``Image`` or any
value with a PNG/JPEG repr as an image to a model with image input (the request body over a
loopback server carries it), and its summary with a labelled placeholder to one without; the
same for `` $`Out[n]` ``, also of a cell that only displayed its figure."""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))
from faults.wire import WIRES
from kernel_ipshell import ip_fixture, run
from loopback import LoopbackServer, Reply, serving
from test_notebook_tools import PNG_1X1
from test_run_retry import chat_reply, chat_requests

from pi_notebook.ai.models import openai_compatible_model, register_models, unregister_models
from pi_notebook.notebook.tools import bounded
from pi_notebook.notebook.tools.outputs import MAX_IMAGE_BYTES, image_size

ip = ip_fixture
PROVIDER = "picture-test"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        openai_compatible_model("seer", srv.url, provider=PROVIDER, images=True)
        openai_compatible_model("reader", srv.url, provider=PROVIDER, images=False)
        try:
            yield srv
        finally:
            unregister_models(PROVIDER)


def ask(ip: Any, server: LoopbackServer, model: str, prompt: str) -> dict[str, Any]:
    """Run ``prompt`` on ``model``; the user message of the request the server got."""
    server.queue(Reply(parts=chat_reply("I see it.")))
    run(ip, f"%%pi --model {PROVIDER}:{model} --new\n{prompt}")
    [request] = chat_requests(server)[-1:]
    user = [m for m in request.json["messages"] if m["role"] == "user"][-1]
    return dict(user)


def image_urls(user: dict[str, Any]) -> list[str]:
    content = user["content"]
    return [p["image_url"]["url"] for p in content if isinstance(p, dict) and p.get("type") == "image_url"]


def text_of(user: dict[str, Any]) -> str:
    content = user["content"]
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in content if p.get("type") == "text")


def png_of(url: str) -> bytes:
    assert url.startswith("data:image/png;base64,")
    return base64.b64decode(url.split(",", 1)[1])


def make_figure(ip: Any) -> None:
    pytest.importorskip("matplotlib")  # the old-IPython venv runs these tests without it
    run(
        ip,
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(3, 2))\nax.plot([1, 3, 2])\nplt.close(fig)",
    )


def test_a_figure_reaches_a_vision_model_as_an_image(ip: Any, server: LoopbackServer) -> None:
    make_figure(ip)
    user = ask(ip, server, "seer", "What trend does $`fig` show?")
    [url] = image_urls(user)
    size = image_size(png_of(url), "image/png")
    assert size is not None
    assert size[0] > 100
    assert size[1] > 50
    text = text_of(user)
    assert "What trend does `fig` show?" in text
    assert "`fig` (value)" in text
    assert "Figure" in text
    assert f"[image 1: {size[0]}x{size[1]} PNG, attached]" in text


def test_a_figure_reaches_a_text_only_model_as_its_summary(ip: Any, server: LoopbackServer) -> None:
    make_figure(ip)
    user = ask(ip, server, "reader", "What trend does $`fig` show?")
    assert image_urls(user) == []
    text = text_of(user)
    assert "Figure" in text
    assert "not sent to the model: it has no image input" in text


def test_pil_and_ipython_images_and_reprs(ip: Any, server: LoopbackServer) -> None:
    pytest.importorskip("PIL")
    ip.user_ns["png"] = PNG_1X1
    run(
        ip,
        "from IPython.display import Image\nimg = Image(data=png)\n"
        "from PIL import Image as PILImage\npic = PILImage.new('RGB', (7, 5), 'red')\n"
        "class Chart:\n    def _repr_mimebundle_(self, include=None, exclude=None):\n"
        "        return {'image/png': png, 'text/plain': 'a chart'}\nchart = Chart()",
    )
    user = ask(ip, server, "seer", "Compare $`img`, $`pic` and $`chart`; ignore $`png`.")
    urls = image_urls(user)
    assert [image_size(png_of(u), "image/png") for u in urls] == [(1, 1), (7, 5), (1, 1)]
    text = text_of(user)
    assert text.count(", attached]") == 3  # the bytes themselves are no picture


def test_out_of_a_cell_and_its_displayed_figure(ip: Any, server: LoopbackServer) -> None:
    ip.user_ns["png"] = PNG_1X1
    run(ip, "from IPython.display import Image\nImage(data=png)")
    returned = ip.execution_count - 1
    shown = ip.run_cell("from IPython.display import display\ndisplay(Image(data=png))", store_history=True)
    assert shown.error_in_exec is None  # not captured: the display reaches the shell's publisher
    displayed = ip.execution_count - 1
    user = ask(ip, server, "seer", f"Look at $`Out[{returned}]` and $`Out[{displayed}]`.")
    assert len(image_urls(user)) == 2
    assert f"`Out[{displayed}]` (value)" in text_of(user)


def test_pictures_are_bounded_like_the_tools_images(ip: Any, server: LoopbackServer) -> None:
    ip.user_ns["big"] = type("Big", (), {"_repr_png_": lambda self: PNG_1X1 + b"\0" * MAX_IMAGE_BYTES})()
    ip.user_ns["png"] = PNG_1X1
    run(
        ip,
        "from IPython.display import Image\nims = [Image(data=png) for _ in range(6)]\n"
        + "\n".join(f"i{n} = ims[{n}]" for n in range(6)),
    )
    refs = " ".join(f"$`i{n}`" for n in range(6))
    user = ask(ip, server, "seer", f"$`big` {refs}")
    assert len(image_urls(user)) == 4
    text = text_of(user)
    assert "not sent to the model: over the 1 MB cap" in text
    assert "not sent to the model: at most 4 images in one result" in text


def test_a_secret_named_picture_is_not_sent(ip: Any, server: LoopbackServer) -> None:
    ip.user_ns["png"] = PNG_1X1
    run(ip, "from IPython.display import Image\napi_key_chart = Image(data=png)")
    user = ask(ip, server, "seer", "Show $`api_key_chart`")
    assert image_urls(user) == []
    assert "looks like a secret" in text_of(user)


def test_a_slow_repr_is_abandoned_and_the_prompt_goes_out(
    ip: Any, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounded, "SUMMARY_SECONDS", 0.5)
    slow_class = "class Slow:\n    def __repr__(self):\n        time.sleep(3)\n        return 'slow'"
    run(ip, f"import time\n{slow_class}\nslow = Slow()")
    started = time.monotonic()
    user = ask(ip, server, "reader", "Look at $`slow`")
    assert time.monotonic() - started < 2.5
    assert "`slow` (evaluation failed)" in text_of(user)
    assert "did not finish within 0.5 s" in text_of(user)


# --- every wire API carries the picture in its own format ----------------------------------------

IMAGE_PARTS = {
    "openai-completions": lambda body: [
        p
        for m in body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image_url"
    ],
    "openai-responses": lambda body: [
        p
        for m in body["input"]
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p["type"] == "input_image"
    ],
    "anthropic-messages": lambda body: [
        p
        for m in body["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image"
    ],
    "google-generative-ai": lambda body: [
        p for c in body["contents"] for p in c["parts"] if "inlineData" in p
    ],
}


@pytest.mark.parametrize("api", list(IMAGE_PARTS))
def test_the_picture_goes_out_in_each_wire_format(ip: Any, api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    wire = WIRES[api]
    provider = "pic-wire"
    with serving(LoopbackServer()) as srv:
        register_models([wire.model(srv.url).model_copy(update={"provider": provider})])
        monkeypatch.setenv("PIC_WIRE_API_KEY", "test-key")
        try:
            srv.queue(Reply(parts=wire.text_script("Seen.").parts()))
            make_figure(ip)
            run(ip, f"%%pi --model {provider}:{wire.model_id} --new\nWhat does $`fig` show?")
            [request] = srv.requests
        finally:
            unregister_models(provider)
    [image] = IMAGE_PARTS[api](request.json)
    assert "iVBORw0KGgo" in json.dumps(image)  # the PNG's base64
