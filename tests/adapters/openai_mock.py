"""A loopback HTTP server on 127.0.0.1 speaking the OpenAI Chat Completions wire format, scripted per request.

The OpenAI Agents SDK talks to it through its real `AsyncOpenAI` client and
`OpenAIChatCompletionsModel`, so what the tests see is what the SDK sends and parses: the tools
array it builds from the adapter's `FunctionTool`s, and the tool messages with each call's result.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]
"""The assistant message to answer with: {"content": "..."} or {"tool_calls": [(id, name, arguments_text), ...]}."""


def completion(reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    finish = "stop"
    if reply.get("tool_calls"):
        message["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                                 for cid, name, args in reply["tool_calls"]]
        finish = "tool_calls"
    return {"id": f"chatcmpl-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": "mock-model", "choices": [{"index": 0, "message": message, "finish_reason": finish,
                                                "logprobs": None}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class ChatServer:
    """`script(request_number, request_json) -> Reply`; every request body is kept in `requests`."""

    def __init__(self, script: Callable[[int, dict[str, Any]], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                server.requests.append(body)
                data = json.dumps(completion(server.script(len(server.requests), body))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def tool_messages(self, request_number: int) -> dict[str, str]:
        """The tool results the SDK sent in request `request_number` (1-based): call id → content."""
        return {m["tool_call_id"]: m["content"] for m in self.requests[request_number - 1]["messages"]
                if m.get("role") == "tool"}


@contextmanager
def chat_server(script: Callable[[int, dict[str, Any]], Reply]) -> Iterator[ChatServer]:
    server = ChatServer(script)
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join(timeout=10)
