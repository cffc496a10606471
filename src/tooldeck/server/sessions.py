"""MCP sessions of one `tooldeck serve`: each has a run id and a frozen snapshot that its calls reuse.

A session is keyed by the streamable-HTTP `Mcp-Session-Id` (handshake-era HTTP clients). Everything
without a session id - the one client of a stdio server, and 2026-07-28 HTTP requests, which carry no
session by design - shares the *default* session. Sessions whose bindings come out identical share one
Snapshot object, so the Runtime's gate table (compiled validators, name maps) is built once for them.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import orjson

from tooldeck.builtins.ask_user_elicit import elicit_answerer
from tooldeck.catalog.catalog import Catalog
from tooldeck.core.descriptors import Scene
from tooldeck.runtime import Runtime
from tooldeck.server.mapping import list_tools
from tooldeck.snapshot.snapshot import Binding, Snapshot

logger = logging.getLogger("tooldeck.serve")

PROVIDER = "openai"
"""Call names follow the OpenAI rules (A-Z a-z 0-9 _ -, 64 chars), a subset of what MCP allows."""


@dataclass(slots=True)
class ToolView:
    """A snapshot and what the MCP handlers read from it, computed once."""

    snapshot: Snapshot
    listing: types.ListToolsResult
    by_name: dict[str, Binding]
    unlisted: frozenset[str] = frozenset()
    """Deferred loading: the tools named only in run_tool's description, which a client may still call by name."""

    @classmethod
    def of(cls, snapshot: Snapshot, turn_context: str = "") -> ToolView:
        listing = list_tools(snapshot, turn_context)
        by_name = snapshot.by_name()
        deferred = snapshot.loading == "deferred"
        unlisted = frozenset(by_name) - {t.name for t in listing.tools} if deferred else frozenset()
        return cls(snapshot, listing, by_name, unlisted)


@dataclass(slots=True)
class ServeSession:
    key: str | None
    run_id: str
    view: ToolView
    notifier: Any = None
    """The SDK `ServerSession` of the session's latest request: its standalone channel carries
    `notifications/tools/list_changed` (handshake era)."""
    last_used: float = field(default_factory=time.monotonic)
    log_level: Any = None
    """The level the client set with `logging/setLevel`: relayed upstream log messages below it are dropped."""


def catalog_fingerprint(catalog: Catalog) -> bytes:
    """Bytes that change when any tool's id, description, schemas, annotations or scenes change."""
    return orjson.dumps([d.to_dict() for d in catalog.descriptors().values()],
                        default=_jsonable, option=orjson.OPT_SORT_KEYS)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return repr(value)


class SessionRegistry:
    def __init__(self, runtime: Runtime, scene: Scene = "session", headless: bool = True,
                 idle_timeout_s: float | None = 30 * 60) -> None:
        self.runtime = runtime
        self.scene: Scene = scene
        self.headless = headless
        self.idle_timeout_s = idle_timeout_s
        self.sessions: dict[str | None, ServeSession] = {}
        self._last: ToolView | None = None
        self._reported: set[str] = set()

    # -- snapshots --------------------------------------------------------------------------------
    def build_view(self, run_id: str) -> ToolView:
        # Not recorded: no call runs through it (each call is an invocation of its own, recorded when it runs).
        inv = self.runtime.invocation(PROVIDER, self.scene, run_id=run_id, headless=self.headless,
                                      ask_user=elicit_answerer, record=False)
        for d in inv.diagnostics:
            if d.message not in self._reported:
                self._reported.add(d.message)
                logger.warning("%s: %s", d.code, d.message)
        snap = inv.snapshot
        last = self._last
        if (last is not None and last.snapshot.bindings == snap.bindings
                and last.snapshot.max_calls_per_invocation == snap.max_calls_per_invocation
                and last.snapshot.loading == snap.loading):
            return last
        self._last = ToolView.of(snap, inv.turn_context())
        return self._last

    # -- sessions ---------------------------------------------------------------------------------
    def get(self, key: str | None) -> ServeSession:
        session = self.sessions.get(key)
        now = time.monotonic()
        if session is None:
            self.prune(now)
            run_id = f"mcp_{uuid.uuid4().hex[:16]}"
            session = self.sessions[key] = ServeSession(key, run_id, self.build_view(run_id))
            logger.info("session %s: run %s, %d tools", key or "(default)", run_id,
                        len(session.view.snapshot.bindings))
        session.last_used = now
        return session

    def default_view(self) -> ToolView:
        return self.get(None).view

    def forget(self, key: str) -> None:
        if self.sessions.pop(key, None) is not None:
            logger.info("session %s ended", key)

    def prune(self, now: float | None = None) -> None:
        """Drop HTTP sessions idle for longer than the transport keeps them (the default one stays)."""
        if self.idle_timeout_s is None:
            return
        now = time.monotonic() if now is None else now
        for key in [k for k, s in self.sessions.items()
                    if k is not None and now - s.last_used > self.idle_timeout_s]:
            self.forget(key)  # type: ignore[arg-type]

    def rebuild(self) -> list[ServeSession]:
        """Rebuild every session's snapshot; return the sessions whose tool list changed."""
        self._last = None
        changed: list[ServeSession] = []
        for session in list(self.sessions.values()):
            view = self.build_view(session.run_id)
            old = session.view.snapshot
            if (view.snapshot.bindings == old.bindings and view.snapshot.loading == old.loading
                    and view.snapshot.max_calls_per_invocation == old.max_calls_per_invocation):
                self._last = session.view  # unchanged: keep the frozen snapshot and its gate table
                continue
            if view.listing != session.view.listing:
                changed.append(session)
            session.view = view
        return changed
