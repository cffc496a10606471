"""Property: random model turns with provider items and provider data, run through a real Runtime with
records on, replay into every format so that `protocols.validate` finds nothing; in the formats of
the invocation's family the items come back verbatim, in order, before the turn's calls, and each
call's provider data beside it; in every other format none of it appears."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.protocols import FORMATS, validate
from tooldeck.protocols.items import FORMAT_FAMILY
from tooldeck.records.replay import replay_all

_TEXT = st.text(alphabet="abc xyz.é!\n", max_size=12)
_SIG = st.text(alphabet="ABCxyz0129+/=", min_size=1, max_size=16).map(lambda s: f"sig:{s}")


def _anthropic_items() -> st.SearchStrategy[list[dict[str, Any]]]:
    thinking = st.one_of(
        st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, _TEXT, _SIG),
        st.builds(lambda d: {"type": "redacted_thinking", "data": d}, _SIG))
    text = st.builds(lambda t: {"type": "text", "text": t}, _TEXT)
    return st.tuples(st.lists(thinking, max_size=3), st.lists(text, max_size=2)).map(lambda p: p[0] + p[1])


def _openai_items() -> st.SearchStrategy[list[dict[str, Any]]]:
    reasoning = st.builds(lambda n, t, e: {"type": "reasoning", "id": f"rs_{n}",
                                           "summary": [{"type": "summary_text", "text": t}] if t else [],
                                           "encrypted_content": e}, st.integers(0, 99), _TEXT, _SIG)
    message = st.builds(lambda t: {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": t, "annotations": []}]}, _TEXT)
    # A reasoning item is followed by what it produced: a message, or the turn's first function_call.
    pair = st.tuples(reasoning, message).map(list)
    responses = st.tuples(st.lists(pair, max_size=2), st.lists(reasoning, max_size=1)).map(
        lambda p: [i for pair_ in p[0] for i in pair_] + p[1])
    chat = st.lists(st.builds(lambda t: {"type": "text", "text": t}, _TEXT), max_size=2)
    return st.one_of(responses, chat)


def _gemini_items() -> st.SearchStrategy[list[dict[str, Any]]]:
    part = st.builds(lambda t, thought, s: {"text": t, **({"thought": True} if thought else {}),
                                            **({"thoughtSignature": s} if s else {})},
                     _TEXT, st.booleans(), st.one_of(st.none(), _SIG))
    return st.lists(part, max_size=3)


ITEMS = {"anthropic": _anthropic_items(), "openai": _openai_items(), "gemini": _gemini_items()}


@st.composite
def _turn(draw: Any, family: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    n = draw(st.integers(1, 4))
    calls = []
    for i in range(n):
        call: dict[str, Any] = {"id": f"call_{i}", "name": draw(st.sampled_from(["echo", "echo", "nope"])),
                                "arguments": draw(st.sampled_from(['{"text":"a"}', "{}", '{"text":', "[1]"]))}
        if family == "gemini" and draw(st.booleans()):
            call["provider_data"] = {"thoughtSignature": draw(_SIG)}
        elif family == "openai" and draw(st.booleans()):
            call["provider_data"] = {"id": f"fc_{i}"}
        calls.append(call)
    return calls, draw(ITEMS[family])


@st.composite
def _history(draw: Any) -> tuple[str, list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]]:
    family = draw(st.sampled_from(sorted(ITEMS)))
    return family, draw(st.lists(_turn(family), min_size=1, max_size=3))


def _assistant_parts(messages: list[dict[str, Any]], fmt: str) -> list[list[dict[str, Any]]]:
    """Per model turn, what it holds before its results (items and calls, as rendered)."""
    if fmt == "openai_responses":
        turns: list[list[dict[str, Any]]] = [[]]
        for item in messages:
            if item["type"] == "function_call_output":
                if turns[-1]:
                    turns.append([])
            else:
                turns[-1].append(item)
        return [t for t in turns if t]
    if fmt == "gemini":
        return [m["parts"] for m in messages if m["role"] == "model"]
    if fmt in ("openai", "mistral"):
        return [[*(m["content"] or []), *m["tool_calls"]] for m in messages if m["role"] == "assistant"]
    return [m["content"] for m in messages if m["role"] == "assistant"]


def _kept_items(items: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """The items a format of their family sends back (each format takes the kinds it knows)."""
    kinds = getattr(FORMATS[fmt], "ITEM_KINDS", None)
    return items if kinds is None else [i for i in items if i.get("type") in kinds]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(_history())
def test_items_survive_record_replay_validate_in_every_format(make_runtime: MakeRuntime, history: Any) -> None:
    family, turns = history
    rt = _runtime(make_runtime)
    inv = rt.invocation(family)
    for calls, items in turns:
        inv.run(calls, provider_items=items)
    out = replay_all(rt.recorder, inv.id)
    for fmt, messages in out.items():
        assert validate(messages, fmt) == [], (fmt, messages)
        rendered = _assistant_parts(messages, fmt)
        assert len(rendered) == len(turns), fmt
        text = orjson.dumps(messages).decode()
        for (calls, items), parts in zip(turns, rendered, strict=True):
            own = FORMAT_FAMILY[fmt] == family
            kept = _kept_items(items, fmt) if own else []
            assert parts[:len(kept)] == kept, fmt
            assert len(parts) == len(kept) + len(calls), fmt
            for call, part in zip(calls, parts[len(kept):], strict=True):
                data = call.get("provider_data")
                if fmt == "gemini" and own and data:
                    assert part["thoughtSignature"] == data["thoughtSignature"]
                elif fmt == "openai_responses" and own and data:
                    assert part["id"] == data["id"]
                else:
                    assert "thoughtSignature" not in part and set(part) <= {"type", "id", "call_id", "name",
                                                                            "arguments", "function", "input",
                                                                            "functionCall"}, (fmt, part)
        if FORMAT_FAMILY[fmt] != family:
            assert "sig:" not in text and "rs_" not in text, fmt


_RUNTIMES: dict[int, Any] = {}


def _runtime(make_runtime: MakeRuntime) -> Any:
    """One runtime per test run (the fixture's factory is the same object across examples)."""
    rt = _RUNTIMES.get(id(make_runtime))
    if rt is None:
        _RUNTIMES.clear()
        rt = _RUNTIMES[id(make_runtime)] = make_runtime(records=True)

        @rt.tool("test", "echo", annotations=ToolAnnotations(concurrency_safe=True))
        async def echo(text: str = "") -> str:
            """Echo the text."""
            return text or "(nothing)"

    return rt
