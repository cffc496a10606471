"""What an MCP server failure is (`Failure`), and what a rule may know about it (`Target`, `Facts`).

`classify.classify` makes a `Failure` out of an exception and the connection's `Evidence`; the
wording of each cause is in `causes.py`. A `Failure` is plain data, persisted by `failure_store`
so that another process can report it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.shared.exceptions import MCPError

from tooldeck.sources.mcp.challenge import Challenge
from tooldeck.sources.mcp.evidence import Evidence, HttpReply, clean_line

Stage = Literal["connect", "list", "session"]
"""`connect`: spawning or reaching the server and the MCP handshake; `list`: tools/list on a live
session; `session`: a live session that ended by itself."""

_MAX_CHAIN = 64


@dataclass(frozen=True, slots=True)
class Target:
    """What the rules need to know about the server's entry (never a secret: no header values, no env)."""

    name: str
    source: str
    transport: str
    command_line: str = ""
    """`command` and `args` as written in the entry (before `${VAR}` expansion), for the server's own log
    only: an argument may be a literal token, and failure text reaches models."""
    command: str | None = None
    cwd: str | None = None
    url: str | None = None
    """As configured; failure text shows it without user info, query or fragment (`evidence.shown_url`)."""
    authorization: bool = False
    """The entry sends an `Authorization` header."""
    connect_timeout_s: float = 30.0
    log_path: str | None = None
    oauth: bool = False
    """OAuth applies to the entry (an HTTP server without its own `Authorization` header or `"oauth": false`):
    `tooldeck mcp login` is the way to a token."""


@dataclass(frozen=True, slots=True)
class Failure:
    code: str
    server: str
    summary: str
    """The cause, worded to follow "MCP server `NAME` ", e.g. "could not start: the command was not found (uvx)"."""
    advice: str
    """What the user should do next."""
    transient: bool = False
    """Trying again later may work (timeouts, refused connections, 5xx) without anyone fixing anything."""
    details: dict[str, Any] = field(default_factory=dict)
    at: float = 0.0

    @property
    def text(self) -> str:
        return f"MCP server `{self.server}` {self.summary}."

    @property
    def full_text(self) -> str:
        return f"{self.text} {self.advice}"

    def model_advice(self) -> str:
        """The next step for a model, which cannot fix the server itself."""
        if self.transient:
            return "It may work again later; use another tool meanwhile."
        return f"The user has to fix this: {self.advice} Until then, use another tool or tell the user."

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "server": self.server, "message": self.text, "summary": self.summary,
                "advice": self.advice, "transient": self.transient, "details": self.details, "at": self.at}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Failure:
        details = data.get("details")
        return cls(str(data["code"]), str(data["server"]), str(data["summary"]), str(data["advice"]),
                   bool(data.get("transient", False)), details if isinstance(details, dict) else {},
                   float(data.get("at") or 0.0))


class ConnectFailed(Exception):
    """Connecting to a server failed before any tool request was sent."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.summary)
        self.failure = failure
        self.code = failure.code
        self.message = failure.summary


def describe(exc: BaseException) -> str:
    """A one-line reason for any exception, looking through exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [describe(e) for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        return "; ".join(dict.fromkeys(leaves)) or "cancelled"
    if isinstance(exc, ConnectFailed):
        return exc.message
    text = clean_line(str(exc).strip().splitlines()[0]) if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def exception_chain(exc: BaseException) -> list[BaseException]:
    """The exception, the members of its groups, and their causes and contexts, breadth first (bounded)."""
    out: list[BaseException] = []
    seen: set[int] = set()
    queue = deque([exc])
    while queue and len(out) < _MAX_CHAIN:
        e = queue.popleft()
        if id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        if isinstance(e, BaseExceptionGroup):
            queue.extend(e.exceptions)
        for linked in (e.__cause__, e.__context__):
            if linked is not None:
                queue.append(linked)
    return out


@dataclass(slots=True)
class Facts:
    """Everything a rule may look at, computed once per classification."""

    exc: BaseException
    target: Target
    stage: Stage
    evidence: Evidence
    chain: list[BaseException]
    reply: HttpReply | None
    """The HTTP reply that explains the failure (`Evidence.decisive_reply`); None for stdio."""
    challenge: Challenge | None
    """The `Bearer` challenge of that reply's `WWW-Authenticate`, if any."""

    @property
    def stdio(self) -> bool:
        return self.target.transport == "stdio"

    def first(self, *kinds: type[BaseException]) -> Any:
        return next((e for e in self.chain if isinstance(e, kinds)), None)

    @property
    def mcp_code(self) -> int | None:
        error = self.first(MCPError)
        return error.code if error is not None else None

    def os_errno(self, *numbers: int) -> OSError | None:
        return next((e for e in self.chain if isinstance(e, OSError) and e.errno in numbers), None)
