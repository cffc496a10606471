"""What the delegation tests share: agent profile files in a home, a router that answers each model
request from the queue of the agent that sent it (runs are concurrent, so one script cannot), and
the calls and tool messages of OpenAI Chat requests."""

from __future__ import annotations

import json
import threading
from collections import deque
from pathlib import Path
from typing import Any

from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider, Reply, Request
from tooldeck.agent.types import ModelConfig

DELEGATION = ["builtin:agent.delegate", "builtin:agent.await", "builtin:agent.handoff"]


def model(mock: MockProvider, **kw: Any) -> ModelConfig:
    return ModelConfig("mock", "openai", "gpt-mock", base_url=mock.url + "/v1", api_key="sk-test",
                       retry_base_delay=0.01, max_retries=0, **kw)


def write_agent(home: Path, agent_id: str, text: str) -> None:
    folder = home / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{agent_id}.toml").write_text(text, encoding="utf-8")


def system_of(request: Request) -> str:
    messages = request.json.get("messages") or []
    return messages[0]["content"] if messages and messages[0]["role"] == "system" else ""


def user_of(request: Request) -> str:
    """The task of the request's run: its last user message (a named subagent session's leg starts with the
    session's past exchanges, so its own task comes after theirs)."""
    return next((m["content"] for m in reversed(request.json["messages"]) if m["role"] == "user"), "")


class Router:
    """`router.on(prefix, *replies, user=None)`: requests whose system instructions start with `prefix`
    (and whose last user message contains `user`, when given) are answered from those replies in order.
    `log` lists (route, request number) as they arrive."""

    def __init__(self, mock: MockProvider) -> None:
        self.routes: list[tuple[str, str | None, deque[Reply]]] = []
        self.log: list[tuple[str, int]] = []
        self.unmatched: list[int] = []
        self._lock = threading.Lock()
        mock.always(self)

    def on(self, prefix: str, *replies: Reply, user: str | None = None) -> Router:
        self.routes.append((prefix, user, deque(replies)))
        return self

    def __call__(self, request: Request) -> Reply:
        system, user = system_of(request), user_of(request)
        with self._lock:
            for prefix, needle, replies in self.routes:
                if system.startswith(prefix) and (needle is None or needle in user):
                    self.log.append((f"{prefix}|{needle or ''}", request.number))
                    if replies:
                        return replies.popleft()
                    break
            self.unmatched.append(request.number)
        return Reply.error(500, {"error": {"message": f"router: nothing left for request {request.number}"}})

    def numbers(self, prefix: str, user: str | None = None) -> list[int]:
        return [n for key, n in self.log if key == f"{prefix}|{user or ''}"]


def call(cid: str, name: str, args: dict[str, Any]) -> tuple[str, str, str]:
    return (cid, name, json.dumps(args))


def calls(*items: tuple[str, str, str], **kw: Any) -> Reply:
    return chat.stream(calls=list(items), **kw)


def answer(text: str, **kw: Any) -> Reply:
    return chat.stream(text, **kw)


def tool_messages(request: Request) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.json["messages"] if m["role"] == "tool"}


def requests_of(mock: MockProvider, router: Router, prefix: str, user: str | None = None) -> list[Request]:
    numbers = set(router.numbers(prefix, user))
    return [r for r in mock.requests if r.number in numbers]
