"""What a connection attempt observed besides its exception: the HTTP replies, the stdout lines that
were not MCP, the end of the process's stderr. The connection fills it; `failures.classify` reads it.

The SDK turns an HTTP error status into a generic JSON-RPC error ("Server returned an error
response") and drops the status and headers, so the HTTP client's response hook records them here.
Everything kept is bounded and cleaned of terminal control sequences, because it may end up in a
message to a model or a terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

MAX_REPLIES = 8
MAX_NOISE_LINES = 3
MAX_STDERR_LINES = 5
MAX_LINE_CHARS = 300
STDERR_READ_BYTES = 8 * 1024

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_MCP_CONTENT_TYPES = ("application/json", "text/event-stream")


def clean_line(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """One line fit to quote: no ANSI colours, line breaks, control or bidi characters, at most `limit`
    characters."""
    text = _CONTROL.sub(" ", _ANSI.sub("", text)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown_url(url: str) -> str:
    """A URL fit for a message: no user info, query or fragment (where tokens hide)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return clean_line(url.split("?", 1)[0].split("#", 1)[0], 300)
    if ":" in host:
        host = f"[{host}]"
    return clean_line(f"{parts.scheme}://{host}{port}{parts.path}", 300)


def speaks_mcp(status: int, content_type: str) -> bool:
    """A 202, or an MCP body (JSON or an event stream)."""
    return status == 202 or content_type.split(";", 1)[0].strip().lower() in _MCP_CONTENT_TYPES


def plain_success(status: int, content_type: str) -> bool:
    return status < 300 and speaks_mcp(status, content_type)


def last_lines(raw: bytes, count: int = MAX_STDERR_LINES) -> list[str]:
    """The last `count` non-empty lines of some process output, cleaned."""
    lines = [clean_line(line) for line in raw.decode("utf-8", errors="replace").splitlines()]
    return [line for line in lines if line][-count:]


@dataclass(frozen=True, slots=True)
class HttpReply:
    """One HTTP response to a POST of the MCP transport that was not a plain MCP success."""

    method: str
    """The JSON-RPC method the POST carried (`initialize`, `server/discover`, `tools/list`, …), or ""."""
    url: str
    status: int
    reason: str
    content_type: str
    www_authenticate: str
    location: str

    @property
    def speaks_mcp(self) -> bool:
        return speaks_mcp(self.status, self.content_type)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "url": self.url, "status": self.status, "reason": self.reason,
                "content_type": self.content_type, "www_authenticate": self.www_authenticate,
                "location": self.location}


MAX_UNSENT = 16


@dataclass(slots=True)
class Evidence:
    replies: list[HttpReply] = field(default_factory=list)
    noise: list[str] = field(default_factory=list)
    """Lines the process wrote on stdout that are not JSON-RPC (the first few)."""
    stderr: list[str] = field(default_factory=list)
    """The last lines the process wrote on stderr during this attempt (filled when it fails)."""
    message_too_large: int | None = None
    """The limit one message of the server went over, and the connection was closed for: a line on a stdio
    server's stdout (`stdio_pipes.MAX_LINE_BYTES`) or an HTTP response body (`transport.MAX_MESSAGE_BYTES`)."""
    unsent: dict[str, BaseException] = field(default_factory=dict)
    """JSON-RPC request id → the error that kept its POST from leaving: no connection to the server could be made
    (`transport.ObservedClient`), so nothing of it reached the server (the last few)."""

    def clear(self) -> None:
        self.replies.clear()
        self.noise.clear()
        self.stderr.clear()
        self.message_too_large = None
        self.unsent.clear()

    def add_unsent(self, request_id: str, error: BaseException) -> None:
        if len(self.unsent) >= MAX_UNSENT:
            del self.unsent[next(iter(self.unsent))]
        self.unsent[request_id] = error

    def add_reply(self, reply: HttpReply) -> None:
        """A reply that was not a plain MCP success (see `succeeded` for those)."""
        if len(self.replies) >= MAX_REPLIES:
            del self.replies[0]
        self.replies.append(reply)

    def succeeded(self) -> None:
        """A plain MCP success: what earlier replies said (a redirect that was followed, a rejected version
        probe) does not explain a later failure. Called for every successful POST, so it costs nothing."""
        if self.replies:
            self.replies.clear()

    def add_noise(self, line: str) -> None:
        if len(self.noise) < MAX_NOISE_LINES:
            cleaned = clean_line(line, 200)
            if cleaned:
                self.noise.append(cleaned)

    def decisive_reply(self) -> HttpReply | None:
        """The reply that explains a failure: the last one since the last plain success. What the version
        probe (`server/discover`) got is passed over unless it is an authorization answer, since a server of
        the older protocol rejects the probe and the handshake goes on without it."""
        for reply in reversed(self.replies):
            if reply.method == "server/discover" and reply.status not in (401, 403):
                continue
            return reply
        return None
