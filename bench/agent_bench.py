"""The agent loop's cost per run against two agent frameworks over the same mock provider, same run.

One scripted run everywhere: the model asks for `add(1, 2)` (one tool call), gets its result, and
answers. The mock (`tests/agent/mock_provider.py`, its ASGI app served in-process through
`httpx.ASGITransport`, so no socket or thread noise) answers at once in OpenAI Chat Completions
form: a tool call when the last message is not a tool result, else the answer. Every variant
speaks Chat Completions to it through httpx:

- tooldeck `Agent.run` (records on: SQLite in a temp dir; non-streaming like the others, and
  streaming for scale);
- OpenAI Agents SDK 0.24.0 `Runner.run` with `OpenAIChatCompletionsModel` over `AsyncOpenAI`
  (tracing off);
- pydantic-ai-slim 2.68.0 `Agent.run` with `OpenAIChatModel` over the same kind of client;
- bare HTTP: the same two requests posted with httpx and decoded with orjson, no loop at all
  (what every variant pays for the mock and the transport).

Medians of interleaved batches (`bench.timing.ainterleaved_us`); the loop overhead is a variant's
time minus the bare HTTP time, and the ratio to read is tooldeck's overhead to the faster
framework's (target ≤ 1/3).

    python -m bench.agent_bench
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us
from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply, Request
from tooldeck.agent.types import ModelConfig

URL = "http://mock.local/v1"
TASK = "Add 1 and 2."


def script(request: Request) -> Reply:
    body = orjson.loads(request.raw)
    stream = bool(body.get("stream"))
    if body["messages"][-1]["role"] == "tool":
        # the tool's result decides the answer, so a run whose call was refused or failed fails its variant's check
        got = body["messages"][-1]["content"]
        answer = "It is 3." if got == "3" else f"The tool returned {got!r}."
        return chat.stream(answer) if stream else Reply.json(chat.completion(answer))
    calls = [("call_1", "add", '{"a": 1, "b": 2}')]
    return chat.stream(calls=calls) if stream else Reply.json(chat.completion(None, calls))


def mock_client(mock: MockProvider) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=mock.app), base_url=URL)


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def tooldeck_variant(mock: MockProvider, home: Path, stream: bool) -> tuple[Callable[[], Awaitable[Any]], Any]:
    rt = tooldeck.Runtime(home, builtins=[], records=True, profile={"max_identical_calls": REPEATS_ALLOWED})
    rt.tool(extension_id="bench", name="add")(add)
    cfg = ModelConfig("mock", "openai", "gpt-mock", base_url=URL, api_key="sk-bench", stream=stream)
    agent = rt.agent(cfg, http_client=mock_client(mock))
    agent._keep_open = True  # one HTTP client for every run, as `async with agent` keeps it

    async def run() -> None:
        result = await agent.run(TASK)
        assert result.ok and result.text == "It is 3.", result.summary()

    return run, rt


def openai_agents_variant(mock: MockProvider) -> Callable[[], Awaitable[Any]]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=URL, api_key="sk-bench", http_client=mock_client(mock))
    agent = Agent(name="bench", model=OpenAIChatCompletionsModel("gpt-mock", client), tools=[function_tool(add)])

    async def run() -> None:
        result = await Runner.run(agent, TASK)
        assert result.final_output == "It is 3."

    return run


def pydantic_ai_variant(mock: MockProvider) -> Callable[[], Awaitable[Any]]:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(base_url=URL, api_key="sk-bench", http_client=mock_client(mock))
    agent = Agent(OpenAIChatModel("gpt-mock", provider=OpenAIProvider(openai_client=client)))
    agent.tool_plain(add)

    async def run() -> None:
        result = await agent.run(TASK)
        assert result.output == "It is 3."

    return run


def bare_variant(mock: MockProvider) -> Callable[[], Awaitable[Any]]:
    client = mock_client(mock)
    first = {"model": "gpt-mock", "messages": [{"role": "user", "content": TASK}]}
    second = {"model": "gpt-mock", "messages": [*first["messages"],  # type: ignore[list-item]
                                                {"role": "assistant", "content": None, "tool_calls": []},
                                                {"role": "tool", "tool_call_id": "call_1", "content": "3"}]}

    async def run() -> None:
        for body in (first, second):
            response = await client.post("/chat/completions", content=orjson.dumps(body),
                                         headers={"content-type": "application/json"})
            orjson.loads(response.content)

    return run


async def measure(inner: int, repeats: int) -> list[tuple[str, float]]:
    mock = MockProvider().always(script)
    mock.stop()  # the socket is not needed: the app is called in-process
    with tempfile.TemporaryDirectory() as tmp:
        ours, rt = tooldeck_variant(mock, Path(tmp) / "a", stream=False)
        ours_stream, rt2 = tooldeck_variant(mock, Path(tmp) / "b", stream=True)
        variants = {
            "bare HTTP (2 requests, no loop)": bare_variant(mock),
            "tooldeck Agent.run, records on": ours,
            "tooldeck Agent.run, records on, streaming": ours_stream,
            "OpenAI Agents SDK Runner.run": openai_agents_variant(mock),
            "pydantic-ai Agent.run": pydantic_ai_variant(mock),
        }
        try:
            return await ainterleaved_us(variants, inner, repeats, warmup=5)
        finally:
            rt.close()
            rt2.close()


def main() -> None:
    rows = asyncio.run(measure(inner=10, repeats=15))
    times = dict(rows)
    bare = times["bare HTTP (2 requests, no loop)"]
    width = max(len(name) for name, _ in rows)
    print("one scripted run: a tool call, its result, the answer (median µs per run; overhead = run - bare HTTP)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value:9.1f} µs   overhead {value - bare:9.1f} µs")
    ours = times["tooldeck Agent.run, records on"] - bare
    sdk = times["OpenAI Agents SDK Runner.run"] - bare
    pyd = times["pydantic-ai Agent.run"] - bare
    faster = min(sdk, pyd)
    print(f"  tooldeck overhead / faster framework's overhead: {ours / faster:5.2f}  (target ≤ 0.33)")
    print(f"  tooldeck run / faster framework's run:           "
          f"{times['tooldeck Agent.run, records on'] / min(sdk + bare, pyd + bare):5.2f}")
    print(f"  per model turn (2 per run): tooldeck overhead {ours / 2:7.1f} µs, "
          f"SDK {sdk / 2:7.1f} µs, pydantic-ai {pyd / 2:7.1f} µs")


if __name__ == "__main__":
    main()
