"""Replay fidelity (issue 15 item 4): provider items of an assistant turn (Responses reasoning items,
Anthropic thinking blocks, Gemini thought signatures, text) are decoded, recorded with the turn
verbatim, and sent back by replay in the place each format wants them; dropped on a replay to another
provider family; checked by `protocols.validate`."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.core.errors import TooldeckError
from tooldeck.protocols import decode_calls, decode_items, runtime_calls, validate
from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
from tooldeck.records.replay import replay, replay_all
from tooldeck.records.schema import MIGRATIONS, SCHEMA_VERSION
from tooldeck.records.store import SqliteRecorder
from tooldeck.runtime import Runtime

SIG_A = "CiQBcsjafQ1+signature/A=="
SIG_B = "EjQKMgFyyNp9signature/B=="
GEMINI_RESPONSE = {"candidates": [{"content": {"role": "model", "parts": [
    {"text": "Let me look.", "thoughtSignature": SIG_A},
    {"functionCall": {"name": "echo", "args": {"text": "a"}}, "thoughtSignature": SIG_B},
    {"functionCall": {"name": "echo", "args": {"text": "b"}}},
]}}]}
THINKING = {"type": "thinking", "thinking": "The user wants an echo.", "signature": "EqQBCkYIBxgCKkBsig=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}
ANTHROPIC_RESPONSE = {"role": "assistant", "stop_reason": "tool_use", "content": [
    THINKING, REDACTED, {"type": "text", "text": "Echoing."},
    {"type": "tool_use", "id": "toolu_01", "name": "echo", "input": {"text": "a"}},
]}
REASONING = {"type": "reasoning", "id": "rs_01", "summary": [{"type": "summary_text", "text": "Echo it."}],
             "encrypted_content": "gAAAAABo-encrypted=="}
RESPONSES_RESPONSE = {"output": [
    REASONING,
    {"type": "function_call", "id": "fc_01", "call_id": "call_a", "name": "echo", "arguments": '{"text":"a"}',
     "status": "completed"},
    {"type": "function_call", "id": "fc_02", "call_id": "call_b", "name": "echo", "arguments": '{"text":"b"}',
     "status": "completed"},
]}


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> Runtime:
    runtime = make_runtime(records=True)

    @runtime.tool("test", "echo", annotations=ToolAnnotations(concurrency_safe=True))
    async def echo(text: str = "") -> str:
        """Echo the text."""
        return text or "(nothing)"

    return runtime


def _model_turns(messages: list[dict[str, Any]], fmt: str) -> list[Any]:
    if fmt == "gemini":
        return [m["parts"] for m in messages if m["role"] == "model"]
    if fmt == "openai_responses":
        return [m for m in messages if m.get("type") != "function_call_output"]
    return [m["content"] for m in messages if m["role"] == "assistant"]


# -- decoding ----------------------------------------------------------------------------------------------
def test_gemini_decoding_keeps_the_thought_signature_as_the_calls_provider_data() -> None:
    calls = runtime_calls(GEMINI_RESPONSE, "gemini", id_seed="inv:1")
    assert calls[0]["provider_data"] == {"thoughtSignature": SIG_B}
    assert "provider_data" not in calls[1]  # parallel calls: only the first carries a signature
    assert decode_items(GEMINI_RESPONSE, "gemini") == [{"text": "Let me look.", "thoughtSignature": SIG_A}]


def test_responses_decoding_keeps_the_function_call_item_id_and_the_reasoning_items() -> None:
    calls = decode_calls(RESPONSES_RESPONSE, "openai_responses")
    assert [c.provider_data for c in calls] == [{"id": "fc_01"}, {"id": "fc_02"}]
    assert decode_items(RESPONSES_RESPONSE, "openai_responses") == [REASONING]


def test_anthropic_items_are_every_block_but_tool_use_in_order() -> None:
    assert decode_items(ANTHROPIC_RESPONSE, "anthropic") == [THINKING, REDACTED, {"type": "text", "text": "Echoing."}]
    assert [c.provider_data for c in decode_calls(ANTHROPIC_RESPONSE, "anthropic")] == [None]


def test_chat_items_are_the_text_and_refusal_of_the_message() -> None:
    message = {"role": "assistant", "content": "On it.", "refusal": None, "tool_calls": []}
    assert decode_items({"choices": [{"message": message}]}, "openai") == [{"type": "text", "text": "On it."}]


# -- record → replay ---------------------------------------------------------------------------------------
def test_gemini_signatures_come_back_beside_their_function_call_in_the_same_part(rt: Runtime) -> None:
    """The reproducer of issue 15 item 4: the signature was dropped, so Gemini 3 rejects the replay."""
    inv = rt.invocation("gemini")
    inv.run(runtime_calls(GEMINI_RESPONSE, "gemini", id_seed=f"{inv.id}:1"),
            provider_items=decode_items(GEMINI_RESPONSE, "gemini"))
    contents = replay(rt.recorder, inv.id, "gemini")
    parts = contents[0]["parts"]
    assert parts[0] == {"text": "Let me look.", "thoughtSignature": SIG_A}
    assert parts[1]["thoughtSignature"] == SIG_B and parts[1]["functionCall"]["args"] == {"text": "a"}
    assert "thoughtSignature" not in parts[2] and parts[2]["functionCall"]["args"] == {"text": "b"}
    assert len(contents[1]["parts"]) == 2  # one functionResponse per call, text parts are no calls
    assert validate(contents, "gemini") == []


def test_anthropic_thinking_blocks_come_first_with_their_signatures(rt: Runtime) -> None:
    inv = rt.invocation("anthropic")
    inv.run(runtime_calls(ANTHROPIC_RESPONSE, "anthropic"), provider_items=decode_items(ANTHROPIC_RESPONSE,
                                                                                          "anthropic"))
    messages = replay(rt.recorder, inv.id, "anthropic")
    assert messages[0]["content"] == [THINKING, REDACTED, {"type": "text", "text": "Echoing."},
                                      {"type": "tool_use", "id": "toolu_01", "name": "echo", "input": {"text": "a"}}]
    assert validate(messages, "anthropic") == []


def test_responses_reasoning_items_come_before_the_function_calls_that_keep_their_ids(rt: Runtime) -> None:
    inv = rt.invocation("openai")
    inv.run(runtime_calls(RESPONSES_RESPONSE, "openai_responses"),
            provider_items=decode_items(RESPONSES_RESPONSE, "openai_responses"))
    items = replay(rt.recorder, inv.id, "openai_responses")
    assert items[0] == REASONING
    assert [(i["type"], i.get("id"), i.get("call_id")) for i in items[1:]] == [
        ("function_call", "fc_01", "call_a"), ("function_call", "fc_02", "call_b"),
        ("function_call_output", None, "call_a"), ("function_call_output", None, "call_b")]
    assert validate(items, "openai_responses") == []
    chat = replay(rt.recorder, inv.id, "openai")  # same family, but Chat has no reasoning items: dropped
    assert chat[0]["content"] is None and set(chat[0]["tool_calls"][0]) == {"id", "type", "function"}
    assert validate(chat, "openai") == []


def test_items_of_another_family_are_dropped_never_emitted(rt: Runtime) -> None:
    inv = rt.invocation("gemini")
    inv.run(runtime_calls(GEMINI_RESPONSE, "gemini", id_seed="s"), provider_items=decode_items(GEMINI_RESPONSE,
                                                                                              "gemini"))
    out = replay_all(rt.recorder, inv.id)
    for fmt, messages in out.items():
        assert validate(messages, fmt) == [], fmt
        if fmt != "gemini":
            assert SIG_A not in str(messages) and SIG_B not in str(messages), fmt
            assert "Let me look." not in str(messages), fmt
    assert out["anthropic"][0]["content"][0]["type"] == "tool_use"
    assert out["openai_responses"][0]["type"] == "function_call" and "id" not in out["openai_responses"][0]


def test_a_turn_without_items_replays_byte_for_byte_as_before(rt: Runtime) -> None:
    inv = rt.invocation("anthropic")
    inv.run([{"id": "toolu_1", "name": "echo", "arguments": {"text": "hi"}}])
    rt.recorder.flush()  # the journaled turn into SQLite now (the group commit would within 50 ms)
    with sqlite3.connect(rt.recorder.path) as conn:
        [(calls,)] = conn.execute("SELECT calls FROM turns").fetchall()
    assert calls.count("[") == 2 and len(__import__("orjson").loads(calls)[0]) == 7  # no provider slot
    assert replay(rt.recorder, inv.id, "anthropic")[0] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "hi"}}]}


def test_refused_calls_keep_their_provider_data_and_the_view_shows_no_tool_id(rt: Runtime) -> None:
    inv = rt.invocation("gemini")
    inv.run([{"id": "c1", "name": "nope", "arguments": {}, "provider_data": {"thoughtSignature": SIG_A}}],
            provider_items=[{"text": "Trying.", "thought": True, "thoughtSignature": SIG_B}])
    [call] = rt.recorder.history(inv.id).calls
    assert call.status == "failed" and call.provider_data == {"thoughtSignature": SIG_A}
    assert call.provider_items == [{"text": "Trying.", "thought": True, "thoughtSignature": SIG_B}]
    parts = replay(rt.recorder, inv.id, "gemini")[0]["parts"]
    assert parts == [{"text": "Trying.", "thought": True, "thoughtSignature": SIG_B},
                     {"functionCall": {"id": "c1", "name": "nope", "args": {}}, "thoughtSignature": SIG_A}]
    with sqlite3.connect(rt.recorder.path) as conn:
        [(tool_id, status, provider)] = conn.execute("SELECT tool_id, status, provider FROM calls_view").fetchall()
    assert tool_id is None and status == "failed" and SIG_A in provider and SIG_B in provider


def test_integers_beyond_64_bits_in_provider_data_survive_exactly(rt: Runtime) -> None:
    big = 2**80 + 1
    inv = rt.invocation("bedrock")
    inv.run([{"id": "c1", "name": "echo", "arguments": {}, "provider_data": {"n": big}}],
            provider_items=[{"type": "x", "n": -big}])
    [call] = rt.recorder.history(inv.id).calls
    assert call.provider_data == {"n": big} and call.provider_items == [{"type": "x", "n": -big}]


def test_the_checked_start_path_keeps_the_provider_slot(tmp_path: Path) -> None:
    store = SqliteRecorder(tmp_path / "records.sqlite")
    try:
        store.invocation_started(InvocationInfo("run", "inv", "gemini", "chat", False, "snap", "{}", 1.0))
        slot = {"data": {"thoughtSignature": SIG_A}, "items": [{"text": "t"}]}
        store.calls_requested("inv", 1, [RequestedCall("a", "echo", "{}", 0, slot)], 2.0)
        store.calls_started("inv", 1, [StartedCall("a", 0, "extension/test:echo", {})], 3.0)
        store.calls_finished("inv", 1, [FinishedCall("a", 0, "extension/test:echo", "completed", {}, "ok", None,
                                                     False, None, [], None, 3.0, 4.0)])
        [call] = store.history("inv").calls
    finally:
        store.close()
    assert (call.status, call.tool_id, call.provider_data, call.provider_items) == (
        "completed", "extension/test:echo", {"thoughtSignature": SIG_A}, [{"text": "t"}])


# -- bad input changes nothing -----------------------------------------------------------------------------
@pytest.mark.parametrize(("provider", "items", "calls_data", "code", "words"), [
    ("anthropic", [{"type": "thinking", "thinking": "x"}], None, "invocation.provider_items_invalid", "signature"),
    ("anthropic", [{"type": "redacted_thinking"}], None, "invocation.provider_items_invalid", "data"),
    ("anthropic", "thinking", None, "invocation.provider_items_invalid", "list"),
    ("openai", [{"type": "reasoning", "id": "rs_1"}], None, "invocation.provider_items_invalid", "summary"),
    ("openai", [{"type": "function_call", "call_id": "x"}], None, "invocation.provider_items_invalid", "calls"),
    ("gemini", [{"functionCall": {"name": "echo"}}], None, "invocation.provider_items_invalid", "calls"),
    ("gemini", [{"text": "x", "thoughtSignature": ""}], None, "invocation.provider_items_invalid", "non-empty"),
    ("gemini", [7], None, "invocation.provider_items_invalid", "JSON object"),
    ("gemini", [{"text": float("nan")}], None, "invocation.provider_items_invalid", "not JSON"),
    ("gemini", None, "sig", "invocation.provider_data_invalid", "JSON object"),
    ("gemini", None, {"thoughtSignature": 5}, "invocation.provider_data_invalid", "thoughtSignature"),
])
def test_bad_provider_input_is_refused_before_anything_runs_or_is_recorded(
        rt: Runtime, provider: str, items: Any, calls_data: Any, code: str, words: str) -> None:
    ran: list[str] = []

    @rt.tool("test", "mark")
    def mark() -> str:
        """Mark."""
        ran.append("x")
        return "marked"

    inv = rt.invocation(provider)
    call: dict[str, Any] = {"id": "c1", "name": "mark", "arguments": {}}
    if calls_data is not None:
        call["provider_data"] = calls_data
    with pytest.raises(TooldeckError) as err:
        inv.run([call, {"id": "c2", "name": "mark", "arguments": {}}], provider_items=items)
    assert err.value.code == code and words in err.value.message and "nothing was run" in err.value.message
    assert ran == [] and inv.round == 0 and rt.recorder.history(inv.id).calls == []
    inv.run([{"id": "c3", "name": "mark", "arguments": {}}])  # the invocation goes on: round 1, budget whole
    assert ran == ["x"] and [c.round for c in rt.recorder.history(inv.id).calls] == [1]


def test_with_records_off_items_are_not_kept_and_results_are_the_same(make_runtime: MakeRuntime) -> None:
    results = []
    for records in (True, False):
        rt = make_runtime(records=records, home=f"h{records}")

        @rt.tool("test", "echo")
        async def echo(text: str = "") -> str:
            """Echo."""
            return text

        inv = rt.invocation("anthropic")
        out = inv.run([{"id": "toolu_1", "name": "echo", "arguments": {"text": "x"}}], provider_items=[THINKING])
        results.append([(r.call_id, r.content, r.is_error) for r in out])
    assert results[0] == results[1] == [("toolu_1", "x", False)]


async def test_arun_takes_the_keyword_too(rt: Runtime) -> None:
    inv = rt.invocation("anthropic")
    await inv.arun([{"id": "toolu_1", "name": "echo", "arguments": {}}], provider_items=[REDACTED])
    assert rt.recorder.history(inv.id).calls[0].provider_items == [REDACTED]


# -- validate learns the rules -----------------------------------------------------------------------------
def _tool_use(i: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "echo", "input": {}}


def _answer(i: str = "toolu_1") -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "ok"}]}


def _codes(messages: list[Any], fmt: str) -> set[str]:
    return {v.code for v in validate(messages, fmt)}


def test_validate_anthropic_thinking_must_keep_its_signature_and_come_first() -> None:
    unsigned = {"type": "thinking", "thinking": "x"}
    assert _codes([{"role": "assistant", "content": [unsigned, _tool_use()]}, _answer()], "anthropic") == {
        "thinking_invalid"}
    late = [{"role": "assistant", "content": [{"type": "text", "text": "t"}, THINKING, _tool_use()]}, _answer()]
    assert _codes(late, "anthropic") == {"thinking_not_first"}
    empty = {"type": "redacted_thinking", "data": ""}
    assert _codes([{"role": "assistant", "content": [empty, _tool_use()]}, _answer()], "anthropic") == {
        "thinking_invalid"}


def test_validate_responses_reasoning_needs_its_following_item() -> None:
    call = {"type": "function_call", "call_id": "c", "name": "echo", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c", "output": "ok"}
    assert _codes([REASONING, call, output], "openai_responses") == set()
    assert _codes([call, REASONING, output], "openai_responses") == {"reasoning_without_following_item"}
    assert _codes([REASONING, REASONING, call, output], "openai_responses") == {"reasoning_without_following_item"}
    assert _codes([call, output, REASONING], "openai_responses") == {"reasoning_without_following_item"}
    assert _codes([{**REASONING, "summary": None}, call, output], "openai_responses") == {"reasoning_invalid"}


def test_validate_gemini_signatures_are_non_empty_strings_in_model_turns() -> None:
    call = {"role": "model", "parts": [{"functionCall": {"name": "echo", "args": {}}, "thoughtSignature": ""}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "echo", "response": {"output": "ok"}}}]}
    assert _codes([{"role": "user", "parts": [{"text": "hi"}]}, call, answer], "gemini") == {
        "thought_signature_invalid"}
    user_sig = {"role": "user", "parts": [{"text": "hi", "thoughtSignature": SIG_A}]}
    assert _codes([user_sig], "gemini") == {"thought_signature_role"}


# -- migration from a v5 store -----------------------------------------------------------------------------
def test_a_v5_store_migrates_and_keeps_reading_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "records.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for version, steps in enumerate(MIGRATIONS[:5], start=1):  # the schema as tooldeck wrote it before v6
        for step in steps:
            if isinstance(step, str):
                conn.execute(step)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO runs VALUES ('run', 1.0)")
    conn.execute("INSERT INTO snapshots VALUES ('snap', 'gemini', '{}', 1.0)")
    conn.execute("INSERT INTO invocations VALUES ('inv', 'run', 'snap', 'gemini', 'chat', 0, 1.0, NULL)")
    conn.execute("INSERT INTO turns (invocation_id, round, owner_id, requested_at, n, dense, calls) VALUES "
                 "('inv', 1, NULL, 2.0, 2, 1, '[[0,\"a\",\"echo\",\"{}\",\"extension/test:echo\",{},2.0],"
                 "[1,\"b\",\"nope\",\"{}\"]]')")
    conn.execute("INSERT INTO results VALUES (1 << 20, 2, 1, 0, 3.0, '[[0,\"completed\",null,2.5,3.0,\"ok\",null,"
                 "false,null,null,null,null],[1,\"failed\",null,null,null,\"no\",null,true,\"tool.unknown_tool\","
                 "null,null,null]]')")
    conn.close()
    store = SqliteRecorder(path)
    try:
        calls = store.history("inv").calls
        assert [(c.status, c.tool_id, c.provider_data, c.provider_items) for c in calls] == [
            ("completed", "extension/test:echo", None, None), ("failed", None, None, None)]
        store.calls_admitted("inv", 2, [RequestedCall("c", "nope", "{}", 0, {"items": [{"text": "x"}]})], [], 4.0)
        assert store.history("inv").calls[2].provider_items == [{"text": "x"}]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
        rows = conn.execute("SELECT round, idx, tool_id, status, provider FROM calls_view ORDER BY round, idx")
        assert rows.fetchall() == [(1, 0, "extension/test:echo", "completed", None),
                                   (1, 1, None, "failed", None), (2, 0, None, "requested", '{"items":[{"text":"x"}]}')]


def test_a_turn_refused_for_a_missing_id_keeps_its_items(rt: Runtime) -> None:
    inv = rt.invocation("anthropic")
    with pytest.raises(TooldeckError) as err:
        inv.run([{"id": "toolu_1", "name": "echo", "arguments": {}}, {"name": "echo", "arguments": {}}],
                provider_items=[THINKING])
    assert err.value.code == "model.invalid_tool_call"
    calls = rt.recorder.history(inv.id).calls
    assert [c.status for c in calls] == ["failed", "failed"] and calls[0].provider_items == [THINKING]
    messages = replay(rt.recorder, inv.id, "anthropic")
    assert messages[0]["content"][0] == THINKING and validate(messages, "anthropic") == []
