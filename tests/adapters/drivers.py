"""One scripted agent per framework, each driven by that framework's own test model.

A script is the model's responses, in order: each a list of tool calls `(id, name, arguments
JSON text)`; after the last one the model answers "done". Every driver runs a real agent of its
framework over a tooldeck runtime through the adapter and reports what the model was given (the
tools) and what it saw back for each call (text, error flag), read from the framework's own
messages:

- OpenAI Agents SDK: `Runner.run` with `OpenAIChatCompletionsModel` over the real `AsyncOpenAI`
  client, against a loopback Chat Completions server (`openai_mock.py`);
- pydantic-ai: `Agent.run` with `FunctionModel`;
- LangGraph: a `StateGraph` of a model node (LangChain's `GenericFakeChatModel`, given
  `bind_tools`) and a `ToolNode`, run with `ainvoke` (async) or `invoke` (sync, in a thread).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from openai import AsyncOpenAI
from pydantic import Field
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import tooldeck
from tooldeck.adapters import langchain as lc_adapter
from tooldeck.adapters.openai_agents import function_tools
from tooldeck.adapters.pydantic_ai import TooldeckToolset

from .conftest import only_invocation
from .openai_mock import chat_server

ScriptedCall = tuple[str, str, str]
Script = list[list[ScriptedCall]]
ERROR_MARKER = "## Tool error\n\n"


@dataclass
class Seen:
    text: str
    is_error: bool


@dataclass
class Outcome:
    invocation_id: str
    seen: dict[str, Seen] = field(default_factory=dict)
    tools: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """name → (description, parameters) as the framework handed them to its model."""
    instructions: str = ""


Driver = Callable[[tooldeck.Runtime, dict[str, Any], Script, str], Awaitable[Outcome]]


async def drive_openai_agents(rt: tooldeck.Runtime, options: dict[str, Any], script: Script,
                              run_id: str) -> Outcome:
    inv = rt.invocation(run_id=run_id, **options)

    def reply(n: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"tool_calls": script[n - 1]} if n <= len(script) else {"content": "done"}

    with chat_server(reply) as server:
        client = AsyncOpenAI(base_url=server.url, api_key="test", max_retries=0,
                             http_client=httpx.AsyncClient(trust_env=False))
        model = OpenAIChatCompletionsModel(model="mock-model", openai_client=client)
        agent = Agent(name="tester", instructions="Use the tools.\n" + inv.turn_context(),
                      tools=function_tools(inv), model=model)
        result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True),
                                  max_turns=len(script) + 2)
        await client.close()
        assert result.final_output == "done"
        out = Outcome(inv.id, instructions=server.requests[0]["messages"][0]["content"])
        for entry in server.requests[0].get("tools", []):
            fn = entry["function"]
            out.tools[fn["name"]] = (fn["description"], fn["parameters"])
        for n in range(2, len(server.requests) + 1):
            for call_id, text in server.tool_messages(n).items():
                is_error = text.startswith(ERROR_MARKER)
                out.seen[call_id] = Seen(text.removeprefix(ERROR_MARKER), is_error)
    return out


async def drive_pydantic_ai(rt: tooldeck.Runtime, options: dict[str, Any], script: Script,
                            run_id: str) -> Outcome:
    given: dict[str, tuple[str, dict[str, Any]]] = {}
    instructions: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if isinstance(m, ModelResponse))
        if step == 0:
            given.update({t.name: (t.description or "", t.parameters_json_schema) for t in info.function_tools})
            instructions.append(info.instructions or "")
        if step < len(script):
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=cid) for cid, name, args in script[step]])
        return ModelResponse(parts=[TextPart("done")])

    agent = PydanticAgent(FunctionModel(model), toolsets=[TooldeckToolset(rt, run_id=run_id, **options)])
    result = await agent.run("go")
    assert result.output == "done"
    out = Outcome(only_invocation(rt, run_id), tools=given, instructions=instructions[0])
    for message in result.all_messages():
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                out.seen[part.tool_call_id] = Seen(str(part.content), part.outcome == "failed")
    return out


class ToolCallingFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, with the `bind_tools` a tool-calling model has: it keeps the
    tools as the provider would get them (`convert_to_openai_tool`)."""

    bound: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeModel:  # type: ignore[override]
        self.bound = [convert_to_openai_tool(t) for t in tools]
        return self


def _langgraph(inv: tooldeck.Invocation, script: Script) -> tuple[Any, ToolCallingFakeModel]:
    replies = [AIMessage(content="", tool_calls=[{"id": cid, "name": name, "args": json.loads(args)}
                                                 for cid, name, args in step]) for step in script]
    replies.append(AIMessage(content="done"))
    tools = lc_adapter.tools(inv)
    model = ToolCallingFakeModel(messages=iter(replies)).bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(), model


def _langgraph_outcome(inv: tooldeck.Invocation, state: dict[str, Any], model: ToolCallingFakeModel) -> Outcome:
    assert state["messages"][-1].content == "done"
    out = Outcome(inv.id)
    for entry in model.bound:
        fn = entry["function"]
        out.tools[fn["name"]] = (fn["description"], fn["parameters"])
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            out.seen[message.tool_call_id] = Seen(str(message.content), message.status == "error")
    return out


async def drive_langgraph_async(rt: tooldeck.Runtime, options: dict[str, Any], script: Script,
                                run_id: str) -> Outcome:
    inv = rt.invocation(run_id=run_id, **options)
    graph, model = _langgraph(inv, script)
    state = await graph.ainvoke({"messages": [("user", "go")]})
    return _langgraph_outcome(inv, state, model)


async def drive_langgraph_sync(rt: tooldeck.Runtime, options: dict[str, Any], script: Script,
                               run_id: str) -> Outcome:
    inv = rt.invocation(run_id=run_id, **options)
    graph, model = _langgraph(inv, script)
    state = await asyncio.to_thread(graph.invoke, {"messages": [("user", "go")]})
    return _langgraph_outcome(inv, state, model)


DRIVERS: dict[str, Driver] = {
    "openai_agents": drive_openai_agents,
    "pydantic_ai": drive_pydantic_ai,
    "langgraph_async": drive_langgraph_async,
    "langgraph_sync": drive_langgraph_sync,
}
BATCHED = {"openai_agents", "pydantic_ai", "langgraph_async"}
"""Drivers whose calls of one model response run as one tooldeck turn (the sync path runs one per turn)."""
