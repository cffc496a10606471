"""Delegation overhead: a child run that answers at once, against a plain loop run, same run.

Three runs over the same mock provider (`tests/agent/mock_provider.py`, its ASGI app called
in-process through `httpx.ASGITransport`, answering at once in OpenAI Chat Completions form), records
on (SQLite in a temp dir):

- plain: the model answers at once (one model turn, one invocation);
- delegating: the parent calls `agent_delegate` and `agent_await` (allCompleted) in one turn, the child
  (a return-mode run of `agents/worker.toml`) calls `task_return` at once, the parent answers: three
  model requests, two runs;
- same turns without delegation: the parent calls `dice_roll` twice in one turn, then answers (the
  parent's share of the delegating run).

The delegation overhead is delegating − same turns without delegation: what the child run costs,
with its task record, its Profile rewrite, its own invocation and records and the summary file. The
ratio to read is that overhead to a plain run.

    python -m bench.delegation_bench
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
from bench.timing import ainterleaved_us
from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply, Request
from tooldeck.agent.types import ModelConfig
from tooldeck.catalog.profile import DEFAULT_ALLOW

URL = "http://mock.local/v1"
DELEGATE = [("d1", "agent_delegate", '{"agentId": "worker", "task": {"objective": "answer at once"}}'),
            ("w1", "agent_await", '{"mode": "allCompleted"}')]
DICE = [("d1", "dice_roll", '{"formula": "d6"}'), ("d2", "dice_roll", '{"formula": "d6"}')]


def script(request: Request) -> Reply:
    messages = orjson.loads(request.raw)["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system.startswith("WORKER"):
        return Reply.json(chat.completion(None, [("r1", "task_return", '{"summary": "done"}')]))
    if messages[-1]["role"] == "tool":  # the parent's calls must have run, or its run is not the one timed
        results = [m["content"] for m in messages if m["role"] == "tool"]
        ran = all(r.startswith("Rolled 1d6: ") for r in results) if system.startswith("DICE") else (
            len(results) == 2 and results[0].startswith("Started delegated task")
            and "### worker - completed" in results[1])
        return Reply.json(chat.completion("done" if ran else f"the calls failed: {results}"))
    if system.startswith("PLAIN"):
        return Reply.json(chat.completion("done"))
    return Reply.json(chat.completion(None, DELEGATE if system.startswith("DELEGATING") else DICE))


def variant(mock: MockProvider, home: Path, instructions: str) -> tuple[Callable[[], Awaitable[Any]], Any]:
    rt = tooldeck.Runtime(home, records=True, profile={"allow": [*DEFAULT_ALLOW, "builtin:agent.*"]})
    (home / "agents").mkdir(exist_ok=True)
    (home / "agents" / "worker.toml").write_text('instructions = "WORKER"\n')
    cfg = ModelConfig("mock", "openai", "gpt-mock", base_url=URL, api_key="sk-bench", stream=False)
    agent = rt.agent(cfg, instructions=instructions,
                     http_client=httpx.AsyncClient(transport=httpx.ASGITransport(app=mock.app), base_url=URL))
    agent._keep_open = True

    async def run() -> None:
        result = await agent.run("go")
        assert result.ok and result.text == "done", result.summary()

    return run, rt


async def measure(inner: int, repeats: int) -> list[tuple[str, float]]:
    mock = MockProvider().always(script)
    mock.stop()  # the app is called in-process
    with tempfile.TemporaryDirectory() as tmp:
        made = {name: variant(mock, Path(tmp) / key, instructions) for name, key, instructions in (
            ("plain run (answers at once)", "plain", "PLAIN"),
            ("parent: 2 dice calls, answer", "dice", "DICE"),
            ("parent: delegate + await, answer; child: task_return", "deleg", "DELEGATING"))}
        try:
            return await ainterleaved_us({name: fn for name, (fn, _) in made.items()}, inner, repeats, warmup=3)
        finally:
            for _, rt in made.values():
                rt.close()


def main() -> None:
    rows = asyncio.run(measure(inner=5, repeats=15))
    times = dict(rows)
    width = max(len(name) for name, _ in rows)
    print("median µs per run (records on, mock provider in-process)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value:9.1f} µs")
    plain = times["plain run (answers at once)"]
    overhead = times["parent: delegate + await, answer; child: task_return"] - times["parent: 2 dice calls, answer"]
    print(f"  delegation overhead (delegating − dice parent): {overhead:9.1f} µs")
    print(f"  delegation overhead / plain run:                {overhead / plain:6.2f}×")


if __name__ == "__main__":
    main()
