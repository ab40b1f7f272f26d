"""The incremental SSE decoder: line endings, chunk boundaries anywhere, comments, fields."""

from __future__ import annotations

import httpx
import pytest
from loopback import Delay, LoopbackServer

from pi_notebook.ai.sse import SSEDecoder, SSEEvent, iter_sse


def decode(*chunks: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.flush()


STREAM = (
    b": keep-alive comment\n"
    b"event: message_start\n"
    b'data: {"a":1}\n'
    b"\n"
    b"id: 7\n"
    b"retry: 1000\n"
    b"data: first line\n"
    b"data:second line\n"
    b"data:  two leading spaces\n"
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)
EXPECTED = [
    SSEEvent("message_start", b'{"a":1}'),
    SSEEvent("message", b"first line\nsecond line\n two leading spaces"),
    SSEEvent("message", b"[DONE]"),
]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_decodes_the_same(ending: bytes) -> None:
    assert decode(STREAM.replace(b"\n", ending)) == EXPECTED


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_any_split_point_decodes_the_same(ending: bytes) -> None:
    data = STREAM.replace(b"\n", ending)
    for cut in range(1, len(data)):
        assert decode(data[:cut], data[cut:]) == EXPECTED, f"split at {cut}: {data[:cut]!r}"


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_one_byte_chunks_decode_the_same(ending: bytes) -> None:
    data = STREAM.replace(b"\n", ending)
    assert decode(*(data[i : i + 1] for i in range(len(data)))) == EXPECTED


def test_a_crlf_split_between_chunks_is_one_line_ending() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    # "\n" completes the CRLF; "\r\n" is the blank line that dispatches: exactly one event.
    assert decoder.feed(b"\n\r\n") == [SSEEvent("message", b"a")]
    assert decoder.flush() == []


def test_a_trailing_cr_is_held_until_the_next_byte_shows_what_it_was() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == []  # the second CR might still be half of a CRLF
    assert decoder.feed(b"data: b\n\n") == [SSEEvent("message", b"a"), SSEEvent("message", b"b")]


def test_events_are_dispatched_only_at_a_blank_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"data: b\n") == []
    assert decoder.feed(b"\n") == [SSEEvent("message", b"a\nb")]


def test_a_stream_without_a_final_blank_line_is_flushed() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x":1}\n\ndata: tail') == [SSEEvent("message", b'{"x":1}')]
    assert decoder.flush() == [SSEEvent("message", b"tail")]
    assert decoder.flush() == []


def test_comments_and_unknown_fields_never_dispatch() -> None:
    assert decode(b": ping\n\n:another\n\nid: 3\nretry: 10\nfoo: bar\n\n") == []


def test_an_event_name_without_data_is_dispatched_like_the_provider_sdks_do() -> None:
    # The WHATWG algorithm drops it; the OpenAI/Anthropic SDK decoders (what Pi runs on)
    # dispatch it with empty data.
    assert decode(b"event: ping\n\n") == [SSEEvent("ping", b"")]


def test_the_event_name_resets_after_each_event() -> None:
    assert decode(b"event: a\ndata: 1\n\ndata: 2\n\n") == [SSEEvent("a", b"1"), SSEEvent("message", b"2")]


def test_utf8_split_inside_a_character_stays_intact() -> None:
    data = "data: héllo 🙈\n\n".encode()
    for cut in range(1, len(data)):
        assert decode(data[:cut], data[cut:]) == [SSEEvent("message", "héllo 🙈".encode())]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_feed_data_gives_the_data_of_the_same_events_at_any_split(ending: bytes) -> None:
    data = STREAM.replace(b"\n", ending)
    expected = [event.data for event in EXPECTED]
    for cut in range(1, len(data)):
        decoder = SSEDecoder()
        got = decoder.feed_data(data[:cut]) + decoder.feed_data(data[cut:])
        assert got + [e.data for e in decoder.flush()] == expected, f"split at {cut}"


def test_feed_data_fast_path_takes_whole_one_line_events_only() -> None:
    decoder = SSEDecoder()
    assert decoder.feed_data(b'data: {"a":1}\n\n') == [b'{"a":1}']
    assert decoder.feed_data(b"data: \n\n") == [b""]
    # two events in one chunk, and an event with two data lines, are not one event
    assert decoder.feed_data(b"data: 1\n\ndata: 2\n\n") == [b"1", b"2"]
    assert decoder.feed_data(b"data: x\ndata: y\n\n") == [b"x\ny"]
    assert decoder.feed_data(b"data: x\rdata: y\n\n") == [b"x\ny"]  # a bare CR ends a line
    # a pending line or a pending event name belongs to the next event
    assert decoder.feed_data(b"data: head\n") == []
    assert decoder.feed_data(b"data: tail\n\n") == [b"head\ntail"]
    assert decoder.feed_data(b"event: ping\n") == []
    assert decoder.feed_data(b"data: p\n\n") == [b"p"]
    assert decoder.feed(b"data: q\n\n") == [SSEEvent("message", b"q")]  # the name did not leak
    assert decoder.feed_data(b'data: {"b":') == []
    assert decoder.feed_data(b"2}\n\n") == [b'{"b":2}']
    assert decoder.flush() == []


async def test_iter_sse_over_a_real_chunked_http_body(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            b'event: one\r\ndata: {"i":',
            Delay(0.01),
            b"1}\r",
            b"\n\r\n: comment\r\ndata: tail",
        ]
    )
    async with httpx.AsyncClient() as client, client.stream("GET", loopback.url) as response:
        events = [event async for event in iter_sse(response.aiter_raw())]
    assert events == [SSEEvent("one", b'{"i":1}'), SSEEvent("message", b"tail")]
