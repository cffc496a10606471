"""The Gemini client against the loopback mock: what it sends (paths, key header, systemInstruction,
toolConfig), what it makes of streamed and plain answers (whole functionCall parts per chunk, text
joined, calls without ids given stable ids, usage with cached tokens), and — through the agent loop —
that thought signatures go back in the part they came with, turn by turn (the mock refuses a request
that drops them, as Gemini 3 does)."""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tests.agent.client_support import CutStream, complete_once
from tests.agent.mock_provider import MockProvider, Reply, Request
from tests.conftest import MakeRuntime
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers import make_client
from tooldeck.agent.providers.gemini import GeminiClient
from tooldeck.agent.types import ModelConfig, ModelRequest, ModelTurn, StreamEvent, Usage
from tooldeck.core.results import AgentToolResult
from tooldeck.protocols import validate
from tooldeck.records.replay import replay

TOOLS = ({"functionDeclarations": [{"name": "add", "description": "Add two integers.", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}]},)
SIG_CALL = "CiQBcsjafQ1+call+signature=="
SIG_TEXT = "EjQKMgFyyNp9+text+signature=="
SYNTHESISED = re.compile(r"call_[0-9a-f]{24}")


def fc(args: dict[str, Any], name: str = "add", sig: str | None = None, call_id: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if call_id is not None:
        part["functionCall"]["id"] = call_id
    if sig is not None:
        part["thoughtSignature"] = sig
    return part


def usage(prompt: int = 10, out: int = 5, thoughts: int = 0, cached: int = 0) -> dict[str, Any]:
    meta = {"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out + thoughts}
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if cached:
        meta["cachedContentTokenCount"] = cached
    return meta


def chunk(parts: list[dict[str, Any]], finish: str | None = None, use: dict[str, Any] | None = None,
          response_id: str = "resp-1") -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": "gemini-mock", "responseId": response_id}
    if use:
        out["usageMetadata"] = use
    return out


def stream(*chunks: dict[str, Any]) -> Reply:
    return Reply.sse(list(chunks), done=False)


def config(mock: MockProvider, **kw: Any) -> ModelConfig:
    return ModelConfig("gem", "gemini", "gemini-mock", base_url=mock.url + "/v1beta", api_key="g-test",
                       retry_base_delay=0.01, **kw)


async def complete(mock: MockProvider, request: ModelRequest, **kw: Any) -> tuple[ModelTurn, list[StreamEvent]]:
    return await complete_once(config(mock, **kw), GeminiClient, request)


# -- the client ----------------------------------------------------------------------------------------------
async def test_request_shape(mock_provider: MockProvider) -> None:
    mock_provider.script(stream(chunk([{"text": "Hi."}], "STOP")),
                         Reply.json(chunk([{"text": "Hi."}], "STOP")))
    await complete(mock_provider, ModelRequest([{"role": "user", "parts": [{"text": "hi"}]}], TOOLS,
                                               instructions="Be brief.", tool_choice={"name": "add"},
                                               max_output_tokens=64))
    await complete(mock_provider, ModelRequest([], TOOLS, tool_choice="none", stream=False))
    first, second = mock_provider.requests
    assert first.path == "/v1beta/models/gemini-mock:streamGenerateContent" and first.query == "alt=sse"
    assert second.path == "/v1beta/models/gemini-mock:generateContent" and second.query == ""
    assert first.headers["x-goog-api-key"] == "g-test" and "authorization" not in first.headers
    assert first.json == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                          "systemInstruction": {"parts": [{"text": "Be brief."}]}, "tools": list(TOOLS),
                          "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add"]}},
                          "generationConfig": {"maxOutputTokens": 64}}
    assert second.json["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}


async def test_streamed_text_thoughts_and_parallel_calls_without_ids(mock_provider: MockProvider) -> None:
    mock_provider.script(stream(
        chunk([{"text": "Thinking ", "thought": True}]),
        chunk([{"text": "about it.", "thought": True}]),
        chunk([{"text": "I will "}]),
        chunk([{"text": "add.", "thoughtSignature": SIG_TEXT}]),
        chunk([fc({"a": 123456, "b": 654321}, sig=SIG_CALL)]),
        chunk([fc({"a": 1, "b": 2})], "STOP", usage(100, 20, thoughts=30, cached=64))))
    turn, events = await complete(mock_provider, ModelRequest([], TOOLS))
    assert [c["arguments"] for c in turn.calls] == [{"a": 123456, "b": 654321}, {"a": 1, "b": 2}]
    assert all(SYNTHESISED.fullmatch(c["id"]) for c in turn.calls) and turn.calls[0]["id"] != turn.calls[1]["id"]
    assert turn.calls[0]["provider_data"] == {"thoughtSignature": SIG_CALL} and "provider_data" not in turn.calls[1]
    assert turn.provider_items == [{"text": "Thinking about it.", "thought": True},
                                   {"text": "I will add.", "thoughtSignature": SIG_TEXT}]
    assert turn.text == "I will add." and turn.stop_reason == "tool_calls"
    assert turn.usage == Usage(100, 50, 64)
    assert [(e.index, e.name) for e in events if e.kind == "tool_call_started"] == [(0, "add"), (1, "add")]
    assert "".join(e.text for e in events if e.kind == "reasoning") == "Thinking about it."
    assert "".join(e.text for e in events if e.kind == "text") == "I will add."


async def test_synthesised_ids_are_stable_and_differ_between_turns(mock_provider: MockProvider) -> None:
    same = chunk([fc({"a": 1, "b": 2})], "STOP", response_id="")
    mock_provider.script(stream(same), stream(same), stream(same))
    client = make_client(config(mock_provider))
    other = make_client(config(mock_provider))
    try:
        one = (await client.complete(ModelRequest([], TOOLS))).calls[0]["id"]
        two = (await client.complete(ModelRequest([], TOOLS))).calls[0]["id"]
        again = (await other.complete(ModelRequest([], TOOLS))).calls[0]["id"]
    finally:
        await client.aclose()
        await other.aclose()
    assert one != two and one == again  # the same answer in the same position of a run gets the same id


async def test_ids_the_api_sends_are_kept(mock_provider: MockProvider) -> None:
    mock_provider.script(Reply.json(chunk([fc({}, call_id="fc-1"), fc({}, call_id="add")], "STOP", usage(3, 1))))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS, stream=False))
    assert turn.calls[0]["id"] == "fc-1" and SYNTHESISED.fullmatch(turn.calls[1]["id"])  # never the name


@pytest.mark.parametrize(("finish", "stop"), [("STOP", "end_turn"), ("MAX_TOKENS", "length"),
                                              ("SAFETY", "content_filter"), ("MALFORMED_FUNCTION_CALL", "other")])
async def test_finish_reasons_are_normalised(mock_provider: MockProvider, finish: str, stop: str) -> None:
    mock_provider.script(stream(chunk([{"text": "x"}], finish)))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.stop_reason == stop


async def test_a_blocked_prompt_an_error_chunk_and_an_empty_stream(mock_provider: MockProvider) -> None:
    mock_provider.script(stream({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage(4, 0)}),
                         stream({"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}),
                         Reply.sse([], done=False))
    turn, _ = await complete(mock_provider, ModelRequest([], TOOLS))
    assert turn.stop_reason == "content_filter" and turn.calls == [] and turn.usage == Usage(4, 0)
    for code, words in (("model.http_error", "Internal error"), ("model.bad_response", "without a response")):
        with pytest.raises(ModelError) as err:
            await complete(mock_provider, ModelRequest([], TOOLS))
        assert err.value.code == code and words in err.value.message


# -- through the loop ----------------------------------------------------------------------------------------
def _drops_signature(req: Request) -> bool:
    """Gemini 3's rule: in the current turn, the first functionCall part of each model step keeps its
    thoughtSignature (and text parts keep theirs)."""
    sent = [p for c in req.json.get("contents", []) if c["role"] == "model" for p in c["parts"]]
    calls = [p for p in sent if "functionCall" in p]
    if not calls:
        return False
    firsts = [c["parts"][[("functionCall" in p) for p in c["parts"]].index(True)]
              for c in req.json["contents"] if c["role"] == "model" and any("functionCall" in p for p in c["parts"])]
    texts = [p for p in sent if p.get("text") == "I will add."]
    return any(p.get("thoughtSignature") != SIG_CALL for p in firsts) or any(
        p.get("thoughtSignature") != SIG_TEXT for p in texts)


@pytest.fixture
def rt(make_runtime: MakeRuntime) -> tooldeck.Runtime:
    runtime = make_runtime()

    @runtime.tool(extension_id="math", name="add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return runtime


async def test_thought_signatures_travel_back_turn_by_turn(rt: tooldeck.Runtime, mock_provider: MockProvider) -> None:
    mock_provider.reject_if(_drops_signature, 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
                                                              "Function call is missing a thought_signature in "
                                                              "functionCall parts."}})
    mock_provider.script(
        stream(chunk([{"text": "I will "}]), chunk([{"text": "add.", "thoughtSignature": SIG_TEXT}]),
               chunk([fc({"a": 2, "b": 3}, sig=SIG_CALL)]),
               chunk([fc({"a": 4, "b": 5})], "STOP", usage(100, 20, cached=0))),
        stream(chunk([fc({"a": 5, "b": 9}, sig=SIG_CALL)], "STOP", usage(150, 8, thoughts=4, cached=96))),
        stream(chunk([{"text": "14"}], "STOP", usage(180, 2, cached=128))))
    result = await rt.agent(config(mock_provider), instructions="Add.").run("2+3 and 4+5, then add them.")
    assert result.status == "completed" and result.text == "14", result.error
    assert result.usage == Usage(430, 34, 224)
    first, second, third = mock_provider.requests
    assert not any(r.rejected for r in mock_provider.requests)
    assert first.json["contents"] == [{"role": "user", "parts": [{"text": "2+3 and 4+5, then add them."}]}]
    model_turn, answers = second.json["contents"][1:]
    ids = [p["functionCall"]["id"] for p in model_turn["parts"][1:]]
    assert all(SYNTHESISED.fullmatch(i) for i in ids) and len(set(ids)) == 2
    assert model_turn == {"role": "model", "parts": [
        {"text": "I will add.", "thoughtSignature": SIG_TEXT},
        {"functionCall": {"id": ids[0], "name": "add", "args": {"a": 2, "b": 3}}, "thoughtSignature": SIG_CALL},
        {"functionCall": {"id": ids[1], "name": "add", "args": {"a": 4, "b": 5}}}]}
    assert answers == {"role": "user", "parts": [
        {"functionResponse": {"id": ids[0], "name": "add", "response": {"output": "5"}}},
        {"functionResponse": {"id": ids[1], "name": "add", "response": {"output": "9"}}}]}
    assert third.json["contents"][:3] == second.json["contents"]
    assert third.json["contents"][3]["parts"][0]["thoughtSignature"] == SIG_CALL
    assert first.json["tools"] == second.json["tools"] == third.json["tools"]
    assert validate(third.json["contents"], "gemini") == []
    # the records keep the synthesised ids and the signatures: replay is what was sent
    assert replay(rt.recorder, result.invocation_ids[0], "gemini") == [model_turn, answers]
    assert [c.call_id for c in rt.recorder.history(result.invocation_ids[0]).calls] == ids


async def test_builders_text_without_items_and_notes_after_results(mock_provider: MockProvider) -> None:
    client = make_client(config(mock_provider))
    try:
        turn = ModelTurn("Let me see.", [{"id": "c1", "name": "add", "arguments": {"a": 1},
                                          "provider_data": {"thoughtSignature": SIG_CALL}}])
        assert client.assistant_message(turn) == [{"role": "model", "parts": [
            {"text": "Let me see."}, {"functionCall": {"id": "c1", "name": "add", "args": {"a": 1}},
                                      "thoughtSignature": SIG_CALL}]}]
        results = [AgentToolResult("c1", None, "boom", None, True, "tool.failed")]
        assert client.tool_results(turn, results, ["[background report 1] done"]) == [{"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "add", "response": {"error": "## Tool error\n\nboom"}}},
            {"text": "[background report 1] done"}]}]
        assert client.assistant_message(ModelTurn()) == []
    finally:
        await client.aclose()


# -- property: streamed = plain, whatever the chunking -------------------------------------------------------
_SIG = st.one_of(st.none(), st.text("ABCxyz+/=", min_size=1, max_size=12))
_TEXT_PART = st.tuples(st.text(min_size=1, max_size=24), _SIG)
_PARTS = st.tuples(st.one_of(st.none(), _TEXT_PART), st.one_of(st.none(), _TEXT_PART),
                   st.lists(st.tuples(st.dictionaries(st.sampled_from("ab"), st.integers(-5, 5), max_size=2), _SIG),
                            max_size=3))


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)] or [text]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_PARTS, st.lists(st.integers(0, 100), max_size=6), st.lists(st.integers(0, 10**6), max_size=20),
       st.sampled_from(["STOP", "MAX_TOKENS"]))
def test_a_streamed_answer_decodes_as_the_plain_one(parts: Any, splits: list[int], cuts: list[int],
                                                    finish: str) -> None:
    thought, said, calls = parts
    whole: list[dict[str, Any]] = []
    chunks: list[dict[str, Any]] = []
    for text_part, is_thought in ((thought, True), (said, False)):
        if text_part is None:
            continue
        body, sig = text_part
        part = {"text": body, **({"thought": True} if is_thought else {}), **({"thoughtSignature": sig} if sig else {})}
        whole.append(part)
        pieces = _pieces(body, splits)
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            chunks.append(chunk([{"text": piece, **({"thought": True} if is_thought else {}),
                                  **({"thoughtSignature": sig} if sig and last else {})}]))
    for args, sig in calls:
        whole.append(fc(args, sig=sig))
        chunks.append(chunk([fc(args, sig=sig)]))
    chunks.append(chunk([], finish, usage(11, 3, thoughts=2, cached=4)))
    cfg = ModelConfig("gem", "gemini", "gemini-mock", api_key="k")

    async def streamed() -> ModelTurn:
        return await GeminiClient(cfg, transport=CutStream(stream(*chunks), cuts)).complete(ModelRequest([], TOOLS))

    got = asyncio.run(streamed())
    want = GeminiClient(cfg).decode(chunk(whole, finish, usage(11, 3, thoughts=2, cached=4)))
    assert (got.calls, got.provider_items, got.text, got.usage, got.stop_reason) == (
        want.calls, want.provider_items, want.text, want.usage, want.stop_reason)


def test_tooldeck_run_with_gemini_flags(tmp_path: Any, mock_provider: MockProvider) -> None:
    """`tooldeck run --provider gemini` end to end (a real CLI process): the key from GEMINI_API_KEY, the
    signature back on the second request, the answer on stdout."""
    import os
    import subprocess
    import sys

    mock_provider.reject_if(lambda r: any("functionCall" in p and p.get("thoughtSignature") != SIG_CALL
                                          for c in r.json.get("contents", []) for p in c["parts"]), 400,
                            {"error": {"code": 400, "message": "Function call is missing a thought_signature"}})
    mock_provider.script(stream(chunk([fc({"formula": "1d1"}, "dice_roll", sig=SIG_CALL)], "STOP", usage(30, 4))),
                         stream(chunk([{"text": "You rolled "}]),
                                chunk([{"text": "1."}], "STOP", usage(40, 3, cached=24))))
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"GEMINI_API_KEY": "g-cli-key", "COLUMNS": "100"})
    proc = subprocess.run([sys.executable, "-m", "tooldeck.cli", "run", "--provider", "gemini", "--model",
                           "gemini-mock", "--base-url", mock_provider.url + "/v1beta", "--home", str(home),
                           "roll 1d1"], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "You rolled 1.\n"
    first, second = mock_provider.requests
    assert first.headers["x-goog-api-key"] == "g-cli-key" and not second.rejected
    model_turn, answer = second.json["contents"][1:]
    assert model_turn["parts"][0]["thoughtSignature"] == SIG_CALL
    assert answer["parts"][0]["functionResponse"]["id"] == model_turn["parts"][0]["functionCall"]["id"]
    assert "g-cli-key" not in (home / "records.sqlite").read_bytes().decode("utf-8", "replace")
