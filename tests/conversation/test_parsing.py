"""The JSONL importer and the search query parser, by example and with hypothesis: any input parses or is
refused with its one code; what is written is read back; the blob search equals a naive scan."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooldeck.conversation.importer import parse_jsonl
from tooldeck.conversation.model import ROLES, Chat, Message
from tooldeck.conversation.query import parse_query
from tooldeck.conversation.search import search
from tooldeck.core.errors import ToolCallError, TooldeckError

FAST = settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_sillytavern_header_roles_and_dates() -> None:
    text = "\ufeff" + "\n".join([
        json.dumps({"user_name": "Me", "character_name": "Bot", "chat_metadata": {}}),
        json.dumps({"name": "Me", "is_user": True, "mes": "hi", "send_date": 1714860000000}),
        "",
        json.dumps({"name": "Bot", "is_user": False, "mes": "hello\r\nthere", "send_date": "May 4, 2024 10:19pm"}),
        json.dumps({"name": "Sys", "is_user": False, "is_system": True, "mes": "[scene]"}),
        json.dumps({"name": "N", "is_user": False, "mes": "Night falls.", "extra": {"type": "narrator"}}),
    ]) + "\r\n"
    parsed = parse_jsonl(text)
    assert parsed.title == "Bot"
    assert [(m.index, m.role, m.name, m.text) for m in parsed.messages] == [
        (0, "user", "Me", "hi"), (1, "assistant", "Bot", "hello\r\nthere"), (2, "system", "Sys", "[scene]"),
        (3, "system", "N", "Night falls.")]
    assert parsed.messages[0].sent == "1714860000000" and parsed.messages[1].sent == "May 4, 2024 10:19pm"


def test_role_content_lines() -> None:
    parsed = parse_jsonl('{"role": "user", "content": "q"}\n'
                         '{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}\n'
                         '{"role": "tool", "content": "42", "name": "add"}\n')
    assert parsed.title is None
    assert [(m.role, m.text, m.name) for m in parsed.messages] == [("user", "q", None), ("assistant", "a\nb", None),
                                                                   ("tool", "42", "add")]


@pytest.mark.parametrize(("text", "problem"), [
    ("", "no messages"),
    ('{"user_name": "only a header"}\n', "no messages"),
    ('{"mes": "a"}\nnot json\n', "line 2: not JSON"),
    ('[1, 2]\n', "line 1: a JSON list"),
    ('{"mes": "a"}\n{"mes": null}\n', "line 2: `mes` is NoneType"),
    ('{"role": "wizard", "content": "x"}\n', "line 1: `role` is 'wizard'"),
    ('{"role": "user"}\n', "line 1: no `content`"),
    ('{"role": "user", "content": 5}\n', "`content` is int"),
    ('{"mes": "a"}\n{"name": "x"}\n', "line 2: `role` is None"),
    (b'{"mes": "\xff"}\n', "line 1: not JSON"),
])
def test_bad_logs(text: str | bytes, problem: str) -> None:
    with pytest.raises(TooldeckError) as caught:
        parse_jsonl(text)
    assert caught.value.code == "chat.import_invalid" and problem in caught.value.message


_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_messages = st.lists(st.tuples(st.sampled_from(ROLES), _texts, st.none() | st.text(min_size=1, max_size=8)),
                     min_size=1, max_size=20)


@FAST
@given(_messages, st.booleans())
def test_import_round_trip(messages: list[tuple[str, str, str | None]], sillytavern: bool) -> None:
    lines = []
    for role, text, name in messages:
        if sillytavern:
            role = "assistant" if role == "tool" else role
            lines.append(json.dumps({"name": name, "is_user": role == "user", "is_system": role == "system",
                                     "mes": text}))
        else:
            lines.append(json.dumps({"role": role, "content": text, "name": name}))
    parsed = parse_jsonl("\n".join(lines))
    expected = [("assistant" if sillytavern and r == "tool" else r, t, n) for r, t, n in messages]
    assert [(m.role, m.text, m.name) for m in parsed.messages] == expected
    assert [m.index for m in parsed.messages] == list(range(len(messages)))


@FAST
@given(st.binary(max_size=300) | st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_import_never_fails_another_way(data: bytes) -> None:
    try:
        parsed = parse_jsonl(data)
    except TooldeckError as exc:
        assert exc.code == "chat.import_invalid"
    else:
        assert parsed.messages and all(isinstance(m.text, str) for m in parsed.messages)


def test_query_examples() -> None:
    q = parse_query('Dragon "the  OLD mill" -dream -"bad dream" dragon')
    assert q.required == ("the old mill", "dragon") and q.excluded == ("dream", "bad dream")
    assert parse_query('"unclosed phrase').required == ("unclosed phrase",)
    assert parse_query("a - b").required == ("a", "-", "b")
    for bad in ("", "  ", "-x", '""', "-\"x y\"", " ".join(f"w{i}" for i in range(17)), "y" * 501):
        with pytest.raises(ToolCallError) as caught:
            parse_query(bad)
        assert caught.value.code == "chat.invalid_query"


@FAST
@given(st.text(max_size=80))
def test_query_parser_is_total(text: str) -> None:
    try:
        q = parse_query(text)
    except ToolCallError as exc:
        assert exc.code == "chat.invalid_query"
        return
    lowered = " ".join(text.lower().split())
    assert q.required and list(q.required) == sorted(q.required, key=len, reverse=True)
    for term in (*q.required, *q.excluded):
        assert term and term == term.lower() and term == " ".join(term.split())
        assert all(word in lowered for word in term.split())


_words = st.sampled_from(["ab", "b", "cab", "x y", "Ab", "y", "ç", "İ", "abab", "bb"])


@FAST
@given(st.lists(st.tuples(st.sampled_from(ROLES), st.lists(_words, max_size=6).map(" ".join)), min_size=1,
                max_size=30),
       st.lists(_words, min_size=1, max_size=3), st.lists(_words, max_size=2), st.none() | st.sampled_from(ROLES),
       st.data())
def test_search_equals_a_naive_scan(rows: list[tuple[str, str]], want: list[str], avoid: list[str], role: Any,
                                    data: Any) -> None:
    chat = Chat("c", tuple(Message(i, r, t) for i, (r, t) in enumerate(rows)))  # type: ignore[arg-type]
    query_text = " ".join(f'"{w}"' for w in want) + "".join(f' -"{w}"' for w in avoid)
    q = parse_query(query_text)
    lo = data.draw(st.integers(0, len(rows) - 1))
    hi = data.draw(st.integers(lo, len(rows) - 1))
    limit = data.draw(st.integers(1, 6))
    found = search(chat, q, lo, hi, role, limit)
    expected = []
    for i in range(lo, hi + 1):
        text = rows[i][1].lower()
        if (role is None or rows[i][0] == role) and all(t in text for t in q.required) \
                and not any(t in text for t in q.excluded):
            expected.append((sum(min(text.count(t), 5) for t in q.required), i))
    expected.sort(reverse=True)
    assert [(h.score, h.index) for h in found.hits] == expected[:limit] and found.matched == len(expected)
