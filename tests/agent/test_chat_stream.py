"""Chat Completions stream assembly: any calls, their arguments cut anywhere and their deltas interleaved
in any order (each call's own pieces in order, as the API sends them), come out whole and in index order."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.agent import chat_replies as chat
from tooldeck.agent.providers.openai_chat import ChatStream
from tooldeck.agent.types import StreamEvent

names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,20}", fullmatch=True)
values = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=10),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                   max_size=3), max_leaves=8)
arguments = st.dictionaries(st.text(max_size=8), values, max_size=4).map(
    lambda d: json.dumps(d, ensure_ascii=False))


def cut(text: str, points: list[int]) -> list[str]:
    marks = sorted({p % (len(text) + 1) for p in points} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(marks)]
    return pieces or [""]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(st.tuples(names, arguments, st.lists(st.integers(0, 500), max_size=6)), min_size=1, max_size=4),
       st.text(max_size=30), st.data())
def test_any_interleaving_assembles_every_call(calls: list[tuple[str, str, list[int]]], text: str,
                                               data: st.DataObject) -> None:
    pieces = {i: cut(args, points) for i, (_, args, points) in enumerate(calls)}
    labels = [i for i, parts in pieces.items() for _ in parts]
    order = data.draw(st.permutations(labels))
    chunks: list[dict[str, Any]] = [chat.chunk({"role": "assistant", "content": text})]
    sent = dict.fromkeys(pieces, 0)
    for i in order:
        part = pieces[i][sent[i]]
        delta: dict[str, Any] = {"index": i, "function": {"arguments": part}}
        if sent[i] == 0:
            delta.update(id=f"call_{i}", type="function")
            delta["function"]["name"] = calls[i][0]
        sent[i] += 1
        chunks.append(chat.chunk({"tool_calls": [delta]}))
    chunks += [chat.chunk({}, "tool_calls"), chat.usage_chunk(chat.usage(7, 3, 2))]
    events: list[StreamEvent] = []
    stream = ChatStream("m", events.append)
    for c in chunks:
        stream.feed(c)
    turn = stream.turn()
    assert turn.calls == [{"id": f"call_{i}", "name": name, "arguments": args} for i, (name, args, _) in
                          enumerate(calls)]
    assert turn.text == text and turn.stop_reason == "tool_calls"
    assert (turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cached_tokens) == (7, 3, 2)
    started = sorted((e.index, e.call_id, e.name) for e in events if e.kind == "tool_call_started")
    assert started == [(i, f"call_{i}", name) for i, (name, _, _) in enumerate(calls)]
    for i, (_, args, _) in enumerate(calls):
        assert "".join(e.text for e in events if e.kind == "tool_call_arguments" and e.index == i) == args
