"""The OpenAI Agents SDK adapter beyond the shared scenarios: raw arguments reach the records
verbatim, and an error reaches the model as a string result marked the way tooldeck marks it for
wire formats without an error flag."""

from __future__ import annotations

import httpx
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from openai import AsyncOpenAI

from tooldeck.adapters.openai_agents import function_tools

from .conftest import MakeRuntime, history, workspace
from .openai_mock import chat_server


async def test_truncated_json_is_recorded_verbatim_and_the_model_is_told(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    raw = '{"path": "output/x.md", "content": "hi"'

    def reply(n: int, body: dict) -> dict:
        return {"tool_calls": [("c1", "workspace_write_file", raw)]} if n == 1 else {"content": "done"}

    with chat_server(reply) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0,
                             http_client=httpx.AsyncClient(trust_env=False))
        agent = Agent(name="t", tools=function_tools(inv),
                      model=OpenAIChatCompletionsModel(model="mock-model", openai_client=client))
        result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
        await client.close()
        sent = server.tool_messages(2)["c1"]

    assert result.final_output == "done"
    assert not (workspace(rt, "r") / "output" / "x.md").exists()
    [call] = history(rt, inv.id).calls
    assert call.raw_arguments == raw
    assert call.result.error_code == "tool.invalid_arguments"
    assert sent == "## Tool error\n\n" + call.result.content.strip()
    assert raw in sent  # tooldeck quotes what came
