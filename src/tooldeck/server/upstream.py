"""Resources, resource templates, prompts and completion of the upstream MCP servers, relayed by `tooldeck serve`.

- Names: `sources/mcp/namespace.py` (a URI or template only one server lists passes unchanged; a clash gives
  the later server's, in name order, `tooldeck+mcp://<server>/<original>`; prompt names follow the names mode
  of tools). The maps of the latest listing route a request back to its server and original name; a request
  for something not in them lists again once before it is refused.
- Access: an upstream resource is governed as the tool id `mcp/<registration-id>:resource:<uri>` (a template:
  `...:resource:<uri template>`, a prompt: `...:prompt:<name>`), so every Profile glob that covers a server's
  tools (`mcp/*`, `mcp/github-*:*`) covers them too. It is offered and served only when the Profile allows it
  (`allow`, not `deny`, permission `allow`) and its MCP permission (`tools.<that name>`, else the server's
  default) is `allow`: a read or a prompt has no confirmation step, so `ask` hides it like `deny`/`off`. A
  request for a hidden one is refused (`serve.resource_denied`, `serve.prompt_denied`) and sends nothing.
- Records: every read, prompt get and completion is an event of the session's run (`mcp_resource_read`,
  `mcp_prompt_get`, `mcp_completion`): server, names, outcome, sizes, argument names, never contents or
  argument values.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from tooldeck.catalog.profile import matches
from tooldeck.runtime import Runtime
from tooldeck.server.own_results import OwnResults
from tooldeck.sources.mcp import ConnectFailed, Watches, assign_prompts, assign_uris, decode_uri

logger = logging.getLogger("tooldeck.serve")

RESOURCE_NOT_FOUND = -32002
"""The MCP spec's JSON-RPC code for a resource that does not exist."""
RESOURCE_UNKNOWN = "serve.resource_unknown"
RESOURCE_DENIED = "serve.resource_denied"
PROMPT_UNKNOWN = "serve.prompt_unknown"
PROMPT_DENIED = "serve.prompt_denied"
COMPLETION_UNKNOWN = "serve.completion_unknown"
UPSTREAM_UNAVAILABLE = "serve.upstream_unavailable"
UPSTREAM_TIMEOUT = "serve.upstream_timeout"

Record = Callable[[str, dict[str, Any]], None]


def pseudo_id(registration_id: str, kind: str, native: str) -> str:
    """The tool id a server's resource, template or prompt is governed as (Profile and MCP permissions)."""
    return f"mcp/{registration_id}:{kind}:{native}"


def template_pattern(template: str) -> re.Pattern[str]:
    """A URI template (RFC 6570) as a regex that matches its expansions: a simple `{var}` any text without
    `/ ? #` (its expansion percent-encodes them), every other expression (`{+var}`, `{?a,b}`, ...) any text."""
    out: list[str] = []
    for i, part in enumerate(re.split(r"(\{[^{}]*\})", template)):
        if i % 2 == 0:
            out.append(re.escape(part))
        else:
            out.append("[^/?#]*" if part[1:2].isalnum() or part[1:2] == "_" else ".*?")
    return re.compile("".join(out), re.DOTALL)


class UpstreamRelay:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.uris: dict[str, tuple[str, str]] = {}
        self.templates: dict[str, tuple[str, str]] = {}
        self.prompts: dict[str, tuple[str, str]] = {}
        self.hidden: dict[tuple[str, str], str] = {}
        """(kind, original) -> server, for what the access rules hide: a request for it is refused clearly."""
        self._rids: dict[str, str] = {}
        self._watches: Watches | None = None
        self.own_results = OwnResults()
        self._callbacks: dict[tuple[str, str], Callable[[str], None]] = {}
        self._pending: set[asyncio.Future[Any]] = set()
        self._in_flight: dict[tuple[tuple[str, str], tuple[str | None, str]], bool] = {}
        """(key, subscriber) -> whether another update came while its `resources/updated` was being sent."""
        self.subscribers: dict[tuple[str, str], dict[tuple[str | None, str], Any]] = {}
        """(server, upstream URI) -> {(session key, URI as the client subscribed to it): the session to notify}"""

    @property
    def available(self) -> bool:
        return self.runtime.mcp is not None

    # -- access -----------------------------------------------------------------------------------
    def allowed(self, registration_id: str, kind: str, native: str) -> bool:
        pid = pseudo_id(registration_id, kind, native)
        profile = self.runtime.profile
        if not any(matches(p, pid) for p in profile.allow) or profile.is_denied(pid) \
                or profile.permission_for(pid) != "allow":
            return False
        manager = self.runtime.mcp
        return manager is not None and manager.permission_for(pid) == "allow"

    def _visible(self, offers: list[Any], kind: str, native: Callable[[Any], str]) -> list[Any]:
        out = []
        for offer in offers:
            self._rids[offer.server] = offer.registration_id
            if self.allowed(offer.registration_id, kind, native(offer.item)):
                out.append(offer)
            else:
                self.hidden[(kind, native(offer.item))] = offer.server
        return out

    # -- listings ---------------------------------------------------------------------------------
    async def list_resources(self) -> tuple[list[types.Resource], list[types.ResourceTemplate]]:
        manager = self.runtime.mcp
        if manager is None:
            return [], []
        listed = await manager.upstream.resources()
        resources = self._visible(listed.resources, "resource", lambda r: r.uri)
        templates = self._visible(listed.templates, "resource", lambda t: t.uri_template)
        self.uris = assign_uris((o.server, o.item.uri) for o in resources)
        self.templates = assign_uris((o.server, o.item.uri_template) for o in templates)
        by_uri = {(o.server, o.item.uri): o.item for o in resources}
        by_template = {(o.server, o.item.uri_template): o.item for o in templates}
        return ([by_uri[key].model_copy(update={"uri": uri}) for uri, key in self.uris.items()],
                [by_template[key].model_copy(update={"uri_template": uri}) for uri, key in self.templates.items()])

    async def list_prompts(self) -> list[types.Prompt]:
        manager = self.runtime.mcp
        if manager is None:
            return []
        offers = self._visible(await manager.upstream.prompts(), "prompt", lambda p: p.name)
        self.prompts = assign_prompts(((o.server, o.label, o.item.name) for o in offers),
                                      manager.config.names == "original")
        by_name = {(o.server, o.item.name): o.item for o in offers}
        return [by_name[key].model_copy(update={"name": name}) for name, key in self.prompts.items()]

    # -- requests ---------------------------------------------------------------------------------
    async def read(self, uri: str, record: Record) -> types.ReadResourceResult:
        server, original = await self._route_uri(uri)
        data: dict[str, Any] = {"server": server, "uri": uri, "upstream_uri": original}
        try:
            result = await self._send(lambda m: m.upstream.read(server, original), server)
        except MCPError as exc:
            record("mcp_resource_read", {**data, "outcome": "error", "code": exc.code})
            raise
        if original != uri:  # the contents name the resource as the client asked for it
            result = result.model_copy(update={"contents": [
                c.model_copy(update={"uri": uri}) if c.uri == original else c for c in result.contents]})
        sizes = [len(getattr(c, "text", None) or getattr(c, "blob", None) or "") for c in result.contents]
        record("mcp_resource_read", {**data, "outcome": "ok", "contents": len(sizes), "chars": sum(sizes)})
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, record: Record) -> types.GetPromptResult:
        server, original = await self._route_prompt(name)
        data: dict[str, Any] = {"server": server, "prompt": name, "upstream_prompt": original,
                                "arguments": sorted(arguments or {})}
        try:
            result = await self._send(lambda m: m.upstream.get_prompt(server, original, arguments), server)
        except MCPError as exc:
            record("mcp_prompt_get", {**data, "outcome": "error", "code": exc.code})
            raise
        record("mcp_prompt_get", {**data, "outcome": "ok", "messages": len(result.messages)})
        return result

    async def complete(self, params: types.CompleteRequestParams, record: Record) -> types.CompleteResult:
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            server, original = await self._route_prompt(ref.name)
            upstream_ref: Any = ref.model_copy(update={"name": original})
        else:
            server, original = await self._route_template(ref.uri)
            upstream_ref = ref.model_copy(update={"uri": original})
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        result = await self._send(lambda m: m.upstream.complete(server, upstream_ref, argument, context), server)
        record("mcp_completion", {"server": server, "ref": original, "argument": params.argument.name,
                                  "values": len(result.completion.values)})
        return result

    # -- subscriptions (handshake-era clients: resources/subscribe) ----------------------------------
    async def subscribe(self, uri: str, session_key: str | None, notifier: Any) -> None:
        server, original = await self._route_uri(uri)
        key = (server, original)
        subscribers = self.subscribers.setdefault(key, {})
        first = not subscribers
        subscribers[(session_key, uri)] = notifier
        if first:
            try:
                await self._send(lambda m: self._watches_of(m).subscribe(server, original, self._updated(key)), server)
            except BaseException:
                del self.subscribers[key]
                raise

    async def unsubscribe(self, uri: str, session_key: str | None) -> None:
        server, original = await self._route_uri(uri)
        key = (server, original)
        subscribers = self.subscribers.get(key, {})
        subscribers.pop((session_key, uri), None)
        if not subscribers and key in self.subscribers:
            del self.subscribers[key]
            await self._send(lambda m: self._watches_of(m).unsubscribe(server, original, self._updated(key)), server)

    def forget(self, session_key: str) -> None:
        """A session ended: its subscriptions and spilled-result links go, and an upstream subscription whose last
        subscriber it was ends too (in the background: the session's end cannot wait for the server)."""
        self.own_results.forget(session_key)
        for key, subscribers in list(self.subscribers.items()):
            for entry in [e for e in subscribers if e[0] == session_key]:
                del subscribers[entry]
            if not subscribers:
                del self.subscribers[key]
                self._unsubscribe_upstream(key)

    def _unsubscribe_upstream(self, key: tuple[str, str]) -> None:
        callback = self._callbacks.get(key)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop: serve is stopping, and the connections with it
            return
        if callback is None:
            return
        server, original = key
        task = loop.create_task(self._send(lambda m: self._watches_of(m).unsubscribe(server, original, callback),
                                           server))
        self._pending.add(task)
        task.add_done_callback(lambda t: self._unsubscribed(key, t))

    def _unsubscribed(self, key: tuple[str, str], task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.info("the upstream subscription to %s of MCP server `%s` was not ended: %s", key[1], key[0],
                        task.exception())

    def _watches_of(self, manager: Any) -> Watches:
        if self._watches is None:
            self._watches = Watches(manager.upstream)
        return self._watches

    def _updated(self, key: tuple[str, str]) -> Callable[[str], None]:
        """The callback of one upstream subscription (on the MCP loop): tell each subscriber, on serve's loop."""
        callback = self._callbacks.get(key)
        if callback is not None:
            return callback
        loop = asyncio.get_running_loop()

        def updated(_uri: str) -> None:  # on the MCP loop: the subscribers are serve's, read them there
            loop.call_soon_threadsafe(self._notify, key)

        self._callbacks[key] = updated
        return updated

    def _notify(self, key: tuple[str, str]) -> None:
        """Tell each subscriber of `key`. One `resources/updated` at a time per subscriber: an update that comes
        while one is being sent is told once more after it (it carries nothing but the URI), so a server that
        floods updates at a slow client costs one pending send, and the client still hears of the last one."""
        for subscriber, notifier in list(self.subscribers.get(key, {}).items()):
            slot = (key, subscriber)
            if slot in self._in_flight:
                self._in_flight[slot] = True
            else:
                self._send_update(slot, notifier)

    def _send_update(self, slot: tuple[tuple[str, str], tuple[str | None, str]], notifier: Any) -> None:
        self._in_flight[slot] = False
        task = asyncio.ensure_future(notifier.send_resource_updated(slot[1][1]))
        self._pending.add(task)
        task.add_done_callback(lambda t: self._sent(slot, t))

    def _sent(self, slot: tuple[tuple[str, str], tuple[str | None, str]], future: Any) -> None:
        self._pending.discard(future)
        key, subscriber = slot
        again = self._in_flight.pop(slot, False)
        if not future.cancelled() and future.exception() is not None:  # that client went away
            logger.debug("resources/updated to session %s dropped: %s", subscriber[0], future.exception())
            self.subscribers.get(key, {}).pop(subscriber, None)
            return
        notifier = self.subscribers.get(key, {}).get(subscriber)
        if again and notifier is not None:
            self._send_update(slot, notifier)

    # -- routing ----------------------------------------------------------------------------------
    async def _route_uri(self, uri: str) -> tuple[str, str]:
        """A listed URI first, then a hidden one (refused), then a template's expansion; else list again once."""
        decoded = decode_uri(uri)
        for attempt in range(2):
            if decoded is not None and self._known(*decoded):
                return decoded
            if decoded is None and uri in self.uris:
                return self.uris[uri]
            hidden = self.hidden.get(("resource", decoded[1] if decoded else uri))
            if hidden is not None and (decoded is None or decoded[0] == hidden):
                raise self._denied(RESOURCE_DENIED, "resource", uri, hidden)
            found = self._match_template(uri) if decoded is None else None
            if found is not None:
                return found
            if attempt == 0:
                await self.list_resources()
        raise MCPError(RESOURCE_NOT_FOUND, f"No upstream MCP server offers the resource {uri[:300]!r}. See "
                       "resources/list and resources/templates/list for what there is.",
                       data={"code": RESOURCE_UNKNOWN, "uri": uri[:300]})

    def _known(self, server: str, original: str) -> bool:
        """A rewritten URI: the server must offer that URI, or a template it expands."""
        if (server, original) in self.uris.values():
            return True
        return any(s == server and template_pattern(t).fullmatch(original) for s, t in self.templates.values()) \
            and self.allowed(self._rids[server], "resource", original)

    def _match_template(self, uri: str) -> tuple[str, str] | None:
        for offered, (server, original) in self.templates.items():
            if offered == original and template_pattern(original).fullmatch(uri) \
                    and self.allowed(self._rids[server], "resource", uri):
                return server, uri
        return None

    async def _route_template(self, uri: str) -> tuple[str, str]:
        for attempt in range(2):
            if uri in self.templates:
                return self.templates[uri]
            if attempt == 0:
                await self.list_resources()
        raise MCPError(types.INVALID_PARAMS, f"No upstream MCP server offers the resource template {uri[:300]!r}; "
                       "see resources/templates/list.", data={"code": COMPLETION_UNKNOWN})

    async def _route_prompt(self, name: str) -> tuple[str, str]:
        for attempt in range(2):
            if name in self.prompts:
                return self.prompts[name]
            hidden = self.hidden.get(("prompt", name))
            if hidden is not None:
                raise self._denied(PROMPT_DENIED, "prompt", name, hidden)
            if attempt == 0:
                await self.list_prompts()
        known = ", ".join(sorted(self.prompts)[:20]) or "(none)"
        raise MCPError(types.INVALID_PARAMS, f"No upstream MCP server offers the prompt {name[:200]!r}. Prompts: "
                       f"{known}.", data={"code": PROMPT_UNKNOWN})

    def _denied(self, code: str, kind: str, native: str, server: str) -> MCPError:
        pid = pseudo_id(self._rids.get(server, "?"), kind, native[:200])
        return MCPError(types.INVALID_PARAMS, f"The {kind} {native[:200]!r} of MCP server `{server}` is not allowed "
                        f"here: tooldeck governs it as `{pid}`, which the Profile (allow/deny/permissions) or the "
                        "server's MCP permissions do not allow (`ask` counts as not allowed: reads have no "
                        "confirmation step). Nothing was sent.", data={"code": code})

    async def _send(self, request: Callable[[Any], Any], server: str) -> Any:
        manager = self.runtime.mcp
        assert manager is not None
        try:
            return await request(manager)
        except ConnectFailed as exc:
            failure = exc.failure
            raise MCPError(types.INTERNAL_ERROR, f"MCP server `{server}` could not be reached: {failure.summary}",
                           data={"code": UPSTREAM_UNAVAILABLE, "cause": failure.code}) from None
        except TimeoutError:
            raise MCPError(types.INTERNAL_ERROR, f"MCP server `{server}` did not answer within its call timeout "
                           "(call_timeout_s).", data={"code": UPSTREAM_TIMEOUT}) from None
