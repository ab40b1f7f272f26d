"""Static renderers of tool cards: arguments streamed then pretty, ``run_code``'s code as
highlighted Python, figures and tables from a tool's details (sanitised), live and frozen."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from hostile import Tags, assert_inert

from pi_notebook.notebook.view.reduce import ToolCard, ViewState
from pi_notebook.notebook.view.render import (
    args_html,
    code_arg,
    details_html,
    format_details,
    render_html,
    render_text,
)
from pi_notebook.notebook.view.render.rich import CELL_STYLE, TABLE_STYLE, table_html


def test_tool_card_args_stream_raw_then_pretty() -> None:
    card = ToolCard(tool_call_id="t", name="n")
    card.append_args('{"x": ')
    state = ViewState()
    state.items.append(card)
    assert '{"x": ' in render_text(state)
    card.args = {"x": [1, 2]}
    assert 'args: {"x": [1, 2]}' in render_text(state)
    assert "(queued)" in render_text(state)


# --- tool cards: code arguments, figures and tables --------------------------------------------

PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
FRAME_HTML = (
    "<div><style scoped>.dataframe tbody tr th {vertical-align: top;}</style>"
    '<table border="1" class="dataframe" onclick="alert(1)"><thead><tr style="text-align: right;">'
    '<th></th><th colspan="2">a</th></tr></thead><tbody><tr><th>0</th><td>1 &lt;b&gt;</td>'
    "<td><script>alert(2)</script><img src=x onerror=alert(3)>2</td></tr></tbody></table>"
    "<p>1 rows × 2 columns</p></div></td></tr></table></div><iframe src='https://evil.example'></iframe>"
)


def card_with(name: str, args: Any = None, details: Any = None, status: Any = "done") -> ToolCard:
    return ToolCard(tool_call_id="c1", name=name, status=status, args=args, content="ok", details=details)


def test_run_code_arguments_show_as_code_with_real_newlines() -> None:
    code = "import math\nx = '<b>' if 1 < 2 else \"$5\"\nprint(x)"
    for status in ("pending_approval", "done"):
        markup = render_html(ViewState(items=[card_with("run_code", {"code": code}, status=status)]))
        parsed = assert_inert(markup)
        assert "<pre" in markup
        assert "<code>" in markup
        assert "\\n" not in markup
        assert "&quot;code&quot;" not in markup
        assert "import math\nx = '<b>' if 1 < 2 else \"$5\"\nprint(x)" in "".join(parsed.text)
        assert "<span style=" in markup  # highlighted
    variable = card_with("set_variable", {"name": "y", "expression": "[i * 2 for i in range(3)]"})
    assert "y = [i * 2 for i in range(3)]" in "".join(Tags(render_html(ViewState(items=[variable]))).text)
    other = card_with("add", {"a": 2, "b": "x" * 90})
    assert '{\n  "a": 2,' in "".join(Tags(render_html(ViewState(items=[other]))).text)  # pretty JSON


def test_the_frozen_text_of_a_run_code_card_shows_the_code_line_by_line() -> None:
    code = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nfor i in range(3):\n\tax.plot([i])\n"
    text = render_text(ViewState(items=[card_with("run_code", {"code": code})]))
    assert text.splitlines() == [
        "[tool] run_code (done)",
        "    code:",
        "        import matplotlib.pyplot as plt",
        "        fig, ax = plt.subplots()",
        "        for i in range(3):",
        "        \tax.plot([i])",
        "    result: ok",
    ]
    assert text == render_text(ViewState(items=[card_with("run_code", {"code": code})]))  # deterministic


def test_other_code_arguments_show_as_lines_and_the_rest_as_one_line_of_json() -> None:
    variable = card_with("set_variable", {"name": "y", "expression": "[i * 2\n for i in range(3)]"})
    assert render_text(ViewState(items=[variable])).splitlines()[1:4] == [
        "    code:",
        "        y = [i * 2",
        "         for i in range(3)]",
    ]
    edit = card_with("edit_cell", {"cell_id": "c7", "old": "x = 1\ny = 2", "new": "x = 3"})
    assert render_text(ViewState(items=[edit])).splitlines()[1:5] == [
        '    args: {"cell_id": "c7", "new": "x = 3"}',
        "    old:",
        "        x = 1",
        "        y = 2",
    ]
    cells = [{"source": "# Title\ntext", "cell_type": "markdown"}, {"source": "a = 1\nb = 2"}]
    insert = card_with("insert_cells", {"cells": cells, "after": "c1"})
    assert render_text(ViewState(items=[insert])).splitlines()[1:8] == [
        '    args: {"after": "c1"}',
        "    cells[0] (markdown):",
        "        # Title",
        "        text",
        "    cells[1] (code):",
        "        a = 1",
        "        b = 2",
    ]
    # control characters stay escaped (a terminal would act on them); an empty code is shown so
    hostile = card_with("run_code", {"code": "print('\x1b[2J')\r\nx = 1"})
    assert render_text(ViewState(items=[hostile])).splitlines()[1:4] == [
        "    code:",
        "        print('\\u001b[2J')",
        "        x = 1",
    ]
    blank = card_with("run_code", {"code": " "})
    assert render_text(ViewState(items=[blank])).splitlines()[1] == '    code: " "'


def test_streaming_run_code_shows_the_code_so_far() -> None:
    card = card_with("run_code", status="streaming")
    card.append_args('{"code": "for i in range(3):\\n    print(i, \\"\\u00e')
    assert code_arg(card) == 'for i in range(3):\n    print(i, "'
    markup, chars = args_html(card)
    assert "for i in range(3):\n    print(i, &quot;" in markup
    assert chars == len(code_arg(card) or "")
    broken = card_with("run_code", status="streaming")
    broken.append_args('{"other": 1, "code": "x"')
    assert code_arg(broken) is None
    assert "&quot;other&quot;" in args_html(broken)[0]


def test_figures_and_tables_from_details_are_shown_and_sanitised() -> None:
    display = [
        {"type": "image", "mime": "image/png", "data": PNG_1X1, "label": "figure 1: 1x1 PNG"},
        {"type": "image", "mime": "image/png", "data": base64.b64encode(b"<svg onload=x>").decode()},
        {"type": "image", "mime": "image/svg+xml", "data": PNG_1X1},
        {"type": "image", "mime": "image/png", "data": PNG_1X1 + '" onerror="alert(1)'},
        {"type": "html", "html": FRAME_HTML, "text": "   a\n0  1"},
        {"type": "html", "html": "<b>no table</b><script>alert(4)</script>", "text": "<plain & text>"},
        {"type": "omitted", "label": "[figure: 2,000,000 bytes, not shown: over 1 MB]"},
    ]
    details = {"stdout": "", "images": 0, "display": display}
    state = ViewState(items=[card_with("run_code", {"code": "df"}, details)])
    markup = render_html(state)
    images = [attrs for tag, attrs in Tags(markup).tags if tag == "img"]
    assert images == [
        {
            "class": "pi-figure",
            "src": f"data:image/png;base64,{PNG_1X1}",
            "alt": "figure 1: 1x1 PNG",
            "style": "display:block;max-width:100%;height:auto;margin:4px 0;",
        }
    ]
    parsed = assert_inert(re.sub(r'<img class="pi-figure"[^>]*>| colspan="2"', "", markup))
    tags = [tag for tag, _ in parsed.tags]
    assert tags.count("table") == 1
    assert "th" in tags
    assert "td" in tags
    assert markup.count(' colspan="2"') == 1
    assert "alert" not in "".join(parsed.text)
    assert "script" not in markup.lower()
    assert "1 <b>" in "".join(parsed.text)
    assert "1 rows × 2 columns" in "".join(parsed.text)
    assert "<plain & text>" in "".join(parsed.text)  # no table: its text/plain, escaped
    assert "not shown: over 1 MB" in "".join(parsed.text)
    # The plain text and the Details section leave the images and HTML out.
    text = render_text(state)
    assert "display" not in text
    assert PNG_1X1 not in text
    assert "dataframe" not in text
    assert "display" not in format_details(details)
    assert PNG_1X1 not in details_html(state.items[0])


def test_table_html_closes_what_it_opens() -> None:
    assert table_html("<table><tr><td>1</div></td></tr>") == (
        f'<table style="{TABLE_STYLE}"><tr><td style="{CELL_STYLE}">1</td></tr></table>'
    )
    assert table_html("<p>just text</p>") is None
    assert table_html("<table>" + "x" * 200_000) is None
