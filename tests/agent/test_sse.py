"""The SSE parser: any events, written with any line ends and cut into any chunks, come back whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.agent.sse import SSEEvent, SSEParser, iter_sse

line_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)
names = st.text(st.characters(whitelist_categories=("Ll",)), min_size=1, max_size=8)
events = st.builds(lambda name, lines, comment: (name, lines, comment),
                   st.none() | names, st.lists(line_text, min_size=1, max_size=4), st.none() | line_text)


def encode(items: list[tuple[str | None, list[str], str | None]], eol: str) -> str:
    out = []
    for name, lines, comment in items:
        if comment is not None:
            out.append(f":{comment}{eol}")
        if name is not None:
            out.append(f"event: {name}{eol}")
        out.extend(f"data: {line}{eol}" for line in lines)
        out.append(eol)
    return "".join(out)


def parse(text: str, cuts: list[int]) -> list[SSEEvent]:
    parser = SSEParser()
    out: list[SSEEvent] = []
    start = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        out.extend(parser.feed(text[start:cut]))
        start = max(start, cut)
    out.extend(parser.feed(text[start:]))
    out.extend(parser.finish())
    return out


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(events, max_size=6), st.sampled_from(["\n", "\r\n", "\r"]), st.lists(st.integers(0, 10_000),
                                                                                    max_size=12))
def test_any_events_any_line_ends_any_chunks(items: list[tuple[str | None, list[str], str | None]], eol: str,
                                              cuts: list[int]) -> None:
    text = encode(items, eol)
    got = parse(text, cuts)
    assert [(e.event, e.data) for e in got] == [(name or "message", "\n".join(lines)) for name, lines, _ in items]


def test_the_spec_details() -> None:
    text = ("\ufeffdata:no space\nid: 7\nretry: 1500\n\nevent\ndata\n\nevent: x\n\ndata:  two spaces\n\n"
            ": only a comment\n\n")
    got = parse(text, [])
    assert got == [SSEEvent("no space", "message", "7", 1500), SSEEvent("", "message", "7"),
                   SSEEvent(" two spaces", "message", "7")]


def test_a_last_event_without_its_blank_line_is_kept() -> None:
    assert parse('data: {"a": 1}', []) == [SSEEvent('{"a": 1}')]
    assert parse("data: a\r", []) == [SSEEvent("a")]


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    parser = SSEParser()
    assert parser.feed("data: a\r") == []
    assert parser.feed("\n\r") == [SSEEvent("a")]
    assert parser.feed("\ndata: b\n\n") == [SSEEvent("b")]


def test_iteration_stops_at_done() -> None:
    async def chunks() -> AsyncIterator[str]:
        for piece in ("data: 1\n\nda", "ta: [DONE]\n\ndata: 2\n\n"):
            yield piece

    async def collect() -> list[str]:
        return [e.data async for e in iter_sse(chunks())]

    assert asyncio.run(collect()) == ["1"]
