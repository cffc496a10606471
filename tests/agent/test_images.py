"""Images from `read_files` reach each model provider in its own shape, through the real agent loop and
the loopback mock provider: a PNG made in the test is read in turn 1, and the request of turn 2 carries it
as Anthropic `tool_result` image blocks, Chat `image_url` parts in a user message after the tool messages,
Responses `input_image` parts in the `function_call_output`, Gemini `inlineData` parts beside the
`functionResponse`. The records keep the copy's path, not the bytes, and replay from them (with the run's
workspace) gives what was sent, even after the original file changed."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.agent import chat_replies
from tests.agent import test_provider_anthropic as anthropic_replies
from tests.agent import test_provider_gemini as gemini_replies
from tests.agent import test_provider_responses as responses_replies
from tests.agent.mock_provider import MockProvider, Reply
from tests.builtins.agenvoy_files.support import PNG
from tests.conftest import MakeRuntime
from tooldeck.agent.types import ModelConfig
from tooldeck.core.results import MODEL_IMAGE_MAX_BYTES
from tooldeck.protocols import FORMATS, validate
from tooldeck.records.replay import replay, replay_all

READ = {"files": [{"path": "output/px.png"}, {"path": "output/note.md"}]}
B64 = base64.b64encode(PNG).decode()
DATA_URL = f"data:image/png;base64,{B64}"


def _chat(mock: MockProvider) -> tuple[ModelConfig, list[Reply]]:
    return (ModelConfig("gpt", "openai", "gpt-mock", base_url=mock.url + "/v1", api_key="k", retry_base_delay=0.01),
            [chat_replies.stream(calls=[("call_1", "read_files", json.dumps(READ))]),
             chat_replies.stream("A red pixel.")])


def _responses(mock: MockProvider) -> tuple[ModelConfig, list[Reply]]:
    r = responses_replies
    return (r.config(mock), [r.stream([r.call("call_1", json.dumps(READ), 1, "read_files")]),
                             r.stream([r.message("A red pixel.", 2)])])


def _anthropic(mock: MockProvider) -> tuple[ModelConfig, list[Reply]]:
    a = anthropic_replies
    return (a.config(mock), [a.stream([{"type": "tool_use", "id": "toolu_1", "name": "read_files", "input": READ}]),
                             a.stream([{"type": "text", "text": "A red pixel."}], "end_turn")])


def _gemini(mock: MockProvider) -> tuple[ModelConfig, list[Reply]]:
    g = gemini_replies
    return (g.config(mock), [g.stream(g.chunk([g.fc(READ, "read_files", call_id="call_1")], "STOP", g.usage())),
                             g.stream(g.chunk([{"text": "A red pixel."}], "STOP", g.usage()))])


SETUPS: dict[str, Callable[[MockProvider], tuple[ModelConfig, list[Reply]]]] = {
    "openai": _chat, "openai_responses": _responses, "anthropic": _anthropic, "gemini": _gemini}
CONVERSATION = {"openai": "messages", "openai_responses": "input", "anthropic": "messages", "gemini": "contents"}


def results_part(fmt: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What answers the turn's calls: Chat's tool and image messages, Responses' function_call_output items,
    Anthropic's and Gemini's user turn after the calls."""
    if fmt == "openai":
        return [m for m in messages if m.get("role") == "tool" or (m.get("role") == "user" and isinstance(
            m.get("content"), list))]
    if fmt == "openai_responses":
        return [i for i in messages if i.get("type") == "function_call_output"]
    return [messages[-1]]


def images_in(fmt: str, part: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """(MIME type, bytes) of every image in the results part, in each format's own shape (and nowhere else)."""
    out: list[tuple[str, bytes]] = []
    for m in part:
        if fmt == "anthropic":
            for block in m["content"]:
                content = block.get("content")
                for b in content if isinstance(content, list) else []:
                    if b["type"] == "image":
                        assert b["source"]["type"] == "base64"
                        out.append((b["source"]["media_type"], base64.b64decode(b["source"]["data"])))
        elif fmt == "openai":
            assert m["role"] != "tool" or isinstance(m["content"], str)  # tool messages take text only
            for p in m["content"] if m["role"] == "user" else []:
                if p["type"] == "image_url":
                    head, data = p["image_url"]["url"].split(",", 1)
                    out.append((head[5:].split(";")[0], base64.b64decode(data)))
        elif fmt == "openai_responses":
            for p in m["output"] if isinstance(m["output"], list) else []:
                if p["type"] == "input_image":
                    head, data = p["image_url"].split(",", 1)
                    out.append((head[5:].split(";")[0], base64.b64decode(data)))
        else:
            for p in m["parts"]:
                if "inlineData" in p:
                    out.append((p["inlineData"]["mimeType"], base64.b64decode(p["inlineData"]["data"])))
    return out


def runtime(make_runtime: MakeRuntime) -> tuple[tooldeck.Runtime, Path]:
    rt = make_runtime(profile={"builtins": "agenvoy"})
    root = Path(rt.run_state("img").workspace_root)
    (root / "output").mkdir(parents=True, exist_ok=True)
    (root / "output" / "px.png").write_bytes(PNG)
    (root / "output" / "note.md").write_text("a note\n")
    return rt, root


@pytest.mark.parametrize("fmt", list(SETUPS))
async def test_the_next_request_carries_the_image_in_the_providers_shape(
        fmt: str, make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt, root = runtime(make_runtime)
    config, replies = SETUPS[fmt](mock_provider)
    mock_provider.script(*replies)
    result = await rt.agent(config).run("What is in output/px.png?", run_id="img")
    assert result.status == "completed" and result.text == "A red pixel.", result.error
    second = mock_provider.requests[1].json[CONVERSATION[fmt]]
    assert validate(second, fmt) == []
    part = results_part(fmt, second)
    assert images_in(fmt, part) == [("image/png", PNG)]
    text = json.dumps(part)
    digest = hashlib.sha256(PNG).hexdigest()
    copy = f"tool-results/images/{digest}.png"
    assert f"copy kept at `{copy}`" in text and "a note" in text  # the text names the copy; the batch is whole
    assert (root / copy).read_bytes() == PNG
    if fmt == "openai":  # the images follow every tool message, named by call and copy
        assert [m["role"] for m in second] == ["user", "assistant", "tool", "user"]
        assert second[-1]["content"][0] == {"type": "text", "text": f"[image 1 of the result of read_files (call "
                                                                     f"call_1): {copy}]"}
        assert second[-1]["content"][1]["image_url"] == {"url": DATA_URL, "detail": "auto"}
    if fmt == "openai_responses":
        [output] = part
        assert output["output"][0]["type"] == "input_text" and output["output"][1] == {
            "type": "input_image", "image_url": DATA_URL, "detail": "auto"}
    if fmt == "gemini":
        parts = part[0]["parts"]
        assert [next(iter(p)) for p in parts] == ["functionResponse", "text", "inlineData"]

    # the records keep the copy's reference, never the bytes
    [call] = rt.recorder.history(result.invocation_ids[0]).calls
    assert call.result is not None and f"image:image/png:{copy}" in call.result.resource_refs
    assert B64 not in json.dumps([call.result.content, call.result.structured, call.result.resource_refs,
                                  call.result.raw_result], default=str)
    # replay from the records gives what was sent, also after the original changed
    (root / "output" / "px.png").write_bytes(b"\x89PNG\r\n\x1a\nchanged")
    replayed = replay(rt.recorder, result.invocation_ids[0], fmt, workspace=root)
    assert results_part(fmt, replayed) == part
    assert validate(replayed, fmt) == []
    # without the workspace, replay gives the text alone (which names the copy) and stays valid
    bare = replay(rt.recorder, result.invocation_ids[0], fmt)
    assert images_in(fmt, results_part(fmt, bare)) == [] and validate(bare, fmt) == []
    assert copy in json.dumps(bare)


async def test_replay_into_every_format_is_valid_and_carries_the_image(
        make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt, root = runtime(make_runtime)
    config, replies = _anthropic(mock_provider)
    mock_provider.script(*replies)
    result = await rt.agent(config).run("Look.", run_id="img")
    assert result.ok, result.error
    every = replay_all(rt.recorder, result.invocation_ids[0], workspace=root)
    assert set(every) == set(FORMATS)
    for fmt, messages in every.items():
        assert validate(messages, fmt) == [], fmt
        shape = "openai" if fmt == "mistral" else fmt
        assert images_in(shape, results_part(shape, messages)) == [("image/png", PNG)], fmt


async def test_an_image_over_the_provider_cap_is_named_not_sent(
        make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt, root = runtime(make_runtime)
    big = PNG + b"\0" * MODEL_IMAGE_MAX_BYTES
    (root / "output" / "px.png").write_bytes(big)
    config, replies = _chat(mock_provider)
    mock_provider.script(*replies)
    result = await rt.agent(config).run("Look.", run_id="img")
    assert result.ok, result.error
    second = mock_provider.requests[1].json["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]  # no image message
    answer = json.loads(second[-1]["content"])
    assert answer["output/px.png"].startswith(f"image (image/png, {len(big):,} bytes): sent as image content to "
                                              "MCP clients only, not to the model: over the 3.75 MiB")
    assert B64[:40] not in mock_provider.requests[1].text


async def test_the_same_image_twice_in_one_batch_is_sent_once(
        make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt, _root = runtime(make_runtime)
    twice = {"files": [{"path": "output/px.png"}, {"path": "output/px.png"}]}
    g = gemini_replies
    mock_provider.script(g.stream(g.chunk([g.fc(twice, "read_files", call_id="call_1")], "STOP", g.usage())),
                         g.stream(g.chunk([{"text": "A red pixel."}], "STOP", g.usage())))
    result = await rt.agent(g.config(mock_provider)).run("Look.", run_id="img")
    assert result.ok, result.error
    second = mock_provider.requests[1].json["contents"]
    assert images_in("gemini", [second[-1]]) == [("image/png", PNG)]
    assert validate(second, "gemini") == []


@pytest.mark.parametrize("fmt", list(SETUPS))
async def test_background_notes_follow_the_images(fmt: str, mock_provider: MockProvider) -> None:
    from tooldeck.agent.providers import make_client
    from tooldeck.agent.types import ModelTurn
    from tooldeck.core.results import AgentToolResult, ToolImage

    config, _replies = SETUPS[fmt](mock_provider)
    client = make_client(config)
    try:
        turn = ModelTurn("", [{"id": "call_1", "name": "read_files", "arguments": READ},
                              {"id": "call_2", "name": "read_files", "arguments": READ}])
        image = ToolImage("tool-results/images/x.png", "image/png", PNG)
        results = [AgentToolResult("call_1", None, "one", images=[image]), AgentToolResult("call_2", None, "two")]
        out = client.tool_results(turn, results, ["[background report 1] done"])
    finally:
        await client.aclose()
    flat = json.dumps(out)
    assert flat.index(B64) < flat.index("[background report 1] done")
    assert images_in(fmt, results_part(fmt, out) if fmt != "openai" else out[:3]) == [("image/png", PNG)]
    if fmt == "openai":
        assert [m["role"] for m in out] == ["tool", "tool", "user", "user"]
        assert out[3] == {"role": "user", "content": "[background report 1] done"}
