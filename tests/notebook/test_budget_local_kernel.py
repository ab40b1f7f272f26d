"""``--max-total-tokens`` on a local server that reports usage only at the end of a stream, in
a real ipykernel (jupyter_client): the stream is cut near the budget, the run's tokens are the
estimate of what was sent and streamed, and the saved output's footer says so."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch
from loopback import LoopbackServer, Reply, json_reply, serving
from test_budget_local import WORD, late_usage_answer

pytestmark = pytest.mark.kernel


def test_a_late_usage_stream_is_cut_near_the_budget_in_a_kernel(k: Kernel) -> None:
    server = LoopbackServer()
    server.queue(json_reply(404, {}))  # no /props: the model keeps its guessed window
    server.queue(Reply(parts=late_usage_answer(300)))  # 1,500 tokens of answer, were it all sent
    with serving(server):
        assert k.run(f"import os; os.environ['LLAMA_CPP_BASE_URL'] = {server.url!r}")["status"] == "ok"
        cell = k.execute("%%pi --model llama.cpp:tiny --tools none --max-total-tokens 300\ntell me a story")
        watch = Watch(k).until_replies([cell], timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert [r.method for r in server.requests] == ["GET", "POST"]
    shown = "repr((_pi.usage.input, _pi.usage.output, _pi.usage.estimated, len(_pi.text), _pi.budget_reason))"
    sent, streamed, estimated, chars, reason = eval(k.value(shown))
    assert estimated is True
    assert chars < 300 * len(WORD)  # cut mid-stream
    assert 300 <= sent + streamed <= 305
    assert reason.startswith("stopped: the run reached its budget of 300 tokens (")
    html = watch.final_bundle()["text/html"]
    assert "out tokens (estimated)" in html
    assert "reached its budget of 300 tokens" in html
