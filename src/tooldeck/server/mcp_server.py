"""tooldeck as an MCP server (official `mcp` SDK 2.3, low-level `Server`).

`tools/list` answers with the bindings of the session's frozen snapshot; every `tools/call` is a new
Invocation on that snapshot and the session's run (so one call never eats a whole conversation's
budget) and goes through the same gate, dispatch and projection as any other call (`Invocation.arun`).
A background check rebuilds the snapshots when the catalog changes and tells the clients
(`notifications/tools/list_changed` on handshake-era connections, `subscriptions/listen` streams on
2026-07-28 ones). See docs/serve.md for the decisions.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import warnings
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp

from tooldeck import __version__
from tooldeck.builtins.ask_user_elicit import elicit_answerer
from tooldeck.core.descriptors import Scene
from tooldeck.core.errors import UNKNOWN_TOOL
from tooldeck.invocation import Invocation
from tooldeck.runtime import Runtime
from tooldeck.server.address import MCP_PATH
from tooldeck.server.config import ServeConfig
from tooldeck.server.confirm import InputRequiredConfirm, declared_elicitation, handshake_confirm
from tooldeck.server.connections import ACCEPT_BACKLOG, ConnectionLimiter, connection_cap
from tooldeck.server.event_store import RETRY_INTERVAL_MS, MemoryEventStore
from tooldeck.server.faults import FaultBoundary
from tooldeck.server.gateway import HttpGateway
from tooldeck.server.held_calls import STATE_PREFIX, HeldCall, HeldCalls, unknown_state
from tooldeck.server.http_lane import HttpLane
from tooldeck.server.listen import ResourceListen
from tooldeck.server.mapping import RELAYED_ERRORS, relayed_call_result, to_call_result
from tooldeck.server.one_loop import serve_on_mcp_loop
from tooldeck.server.raw_arguments import RawArguments
from tooldeck.server.relay_requests import DownstreamPeer, can_be_asked, progress_token, request_log_level
from tooldeck.server.security import HttpGuard
from tooldeck.server.session_cap import SessionCap
from tooldeck.server.sessions import PROVIDER, ServeSession, SessionRegistry, ToolView, catalog_fingerprint
from tooldeck.server.stdio import stdio_streams
from tooldeck.server.upstream import UpstreamRelay
from tooldeck.snapshot.deferred import RUN_TOOL
from tooldeck.sources.mcp import collect_results, relay_to

logger = logging.getLogger("tooldeck.serve")

SERVER_NAME = "tooldeck"
INSTRUCTIONS = ("Tools of a tooldeck runtime. A tool error comes back as a result with isError set; its text "
                "says what was wrong and how to call again.")


@dataclass(frozen=True, slots=True)
class ServeOptions:
    scene: Scene = "session"
    headless: bool = True
    """An MCP client is not a tooldeck chat UI: tools that need one are not offered."""
    watch_interval_s: float | None = 1.0
    """How often the catalog is checked for changes; None turns the check off."""
    limits: ServeConfig = field(default_factory=ServeConfig)
    """The `[serve]` bounds (HTTP only: connections, read deadlines, body size, sessions)."""

    @property
    def session_idle_timeout_s(self) -> float:
        return self.limits.session_idle_timeout


class _Server(Server[dict[str, Any]]):
    """The SDK server, declaring `tools.listChanged` on every transport (the HTTP session manager
    builds its initialization options without arguments)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions)


class TooldeckMCPServer:
    def __init__(self, runtime: Runtime, options: ServeOptions | None = None) -> None:
        self.runtime = runtime
        self.options = options or ServeOptions()
        self.registry = SessionRegistry(runtime, self.options.scene, self.options.headless,
                                        self.options.session_idle_timeout_s)
        self.bus = InMemorySubscriptionBus()
        self._listen = ResourceListen(self.bus)
        self._fingerprint: bytes | None = None
        self.held = HeldCalls()
        """2026-07-28 calls held for the client's answers to upstream requests (`held_calls.py`)."""
        self.http_server: Any = None
        """The uvicorn server while `serve_http` runs (its `should_exit` stops it)."""
        self._stop_asked = False
        """A stop that came before `serve_http` made its uvicorn server: the server stops as soon as it starts."""
        with warnings.catch_warnings():  # logging/setLevel is deprecated in 2026-07-28, still the handshake era's way
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server = _Server(
                SERVER_NAME,
                version=__version__,
                instructions=INSTRUCTIONS,
                lifespan=self._lifespan,
                get_tool_input_schema=self._input_schema,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_subscriptions_listen=self._listen,
                on_set_logging_level=self._set_level,
                **self.upstream_handlers(),
            )
        if self.upstream.available:
            self._listen.upstream = self.upstream
        # The SDK's default OpenTelemetry span per message costs on every call; tooldeck keeps its own records.
        # What stays: faults escaping a handler become JSON-RPC -32603, never the SDK's code 0.
        self.server.middleware = [FaultBoundary(), RawArguments(self)]

    # -- lifecycle --------------------------------------------------------------------------------
    @asynccontextmanager
    async def _lifespan(self, _server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        self._fingerprint = catalog_fingerprint(self.runtime.catalog)
        async with anyio.create_task_group() as tg:
            if self.options.watch_interval_s:
                tg.start_soon(self._watch, self.options.watch_interval_s)
            try:
                yield {}
            finally:
                self._listen.close()
                self.held.close()
                tg.cancel_scope.cancel()

    async def _watch(self, interval: float) -> None:
        while True:
            await anyio.sleep(interval)
            try:
                await self.check_catalog()
            except Exception:  # a broken source must not stop the server; the next check tries again
                logger.exception("catalog check failed")

    async def check_catalog(self) -> bool:
        """Rebuild the sessions' snapshots if the catalog changed and notify clients; True if any list changed."""
        fingerprint = catalog_fingerprint(self.runtime.catalog)
        if fingerprint == self._fingerprint:
            return False
        self._fingerprint = fingerprint
        changed = self.registry.rebuild()
        if not changed:
            return False
        logger.info("tool list changed for %d session(s)", len(changed))
        await self.bus.publish(ToolsListChanged())
        for session in changed:
            await _notify_list_changed(session)
        return True

    # -- handlers ---------------------------------------------------------------------------------
    def _session(self, ctx: ServerRequestContext[Any, Any]) -> ServeSession:
        request = ctx.request
        key = request.headers.get("mcp-session-id") if request is not None else None
        session = self.registry.get(key)
        session.notifier = ctx.session
        return session

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        binding = self.registry.default_view().by_name.get(name)
        return binding.descriptor.input_schema if binding is not None else None

    async def _list_tools(self, ctx: ServerRequestContext[Any, Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return self._session(ctx).view.listing

    async def _set_level(self, ctx: ServerRequestContext[Any, Any],
                         params: types.SetLevelRequestParams) -> types.EmptyResult:
        """`logging/setLevel`: the session's filter for relayed log messages, forwarded to the upstream servers."""
        self._session(ctx).log_level = params.level
        manager = getattr(self.runtime, "mcp", None)
        if manager is not None and hasattr(manager, "set_log_level"):
            await manager.set_log_level(params.level)
        return types.EmptyResult()

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult | types.InputRequiredResult:
        return await self.call(ctx, params.name, params.arguments, params)

    async def call(self, ctx: ServerRequestContext[Any, Any], name: str, arguments: Any,
                   params: types.CallToolRequestParams | None = None,
                   ) -> types.CallToolResult | types.InputRequiredResult:
        """One `tools/call`: `arguments` as the client sent them (an object, or - see `RawArguments` - any
        other JSON value, which the gate refuses as `tool.invalid_arguments`)."""
        if not name:
            raise MCPError(types.INVALID_PARAMS, "tools/call needs a tool name; see tools/list for the names.")
        raw_params = params if params is not None else ctx.params
        modern_client = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        state = params.request_state if params is not None and modern_client else None
        if state is not None and state.startswith(STATE_PREFIX):  # the retry of a held call, with the answers
            resumed = self.held.resume(state, name, arguments)
            if resumed is None:
                return unknown_state()
            resumed.peer.rebind(ctx.session, ctx.request_id, progress_token(raw_params))
            resumed.answer(params.input_responses if params is not None else None)
            return await self._deliver(resumed)
        session = self._session(ctx)
        view = session.view
        request_id = ctx.request_id
        modern = (InputRequiredConfirm(params, ctx.session) if params is not None
                  and modern_client and declared_elicitation(ctx.session) else None)
        confirm = modern if modern is not None else handshake_confirm(ctx.session, request_id)
        inv = self.runtime.invocation(PROVIDER, self.options.scene, run_id=session.run_id,
                                      headless=self.options.headless, confirm=confirm, snapshot=view.snapshot,
                                      ask_user=elicit_answerer)
        call: dict[str, Any] = {"id": f"mcp_{request_id}", "name": name}
        if name in view.unlisted:
            # Deferred loading keeps the client's tools array to find_tools and run_tool; a client that calls
            # another tool by its name knows it, so the call runs as run_tool would run it (same gate: the
            # arguments are validated against the tool's schema), not refused with `tool.use_run_tool`.
            inv.fetched.add(view.by_name[name].tool_id)
            call["name"] = RUN_TOOL
            call["arguments"] = {"name": name} if arguments is None else {"name": name, "args": arguments}
        elif arguments is not None:
            call["arguments"] = arguments
        # A 2026-07-28 client that can answer sampling, elicitation or roots: the call runs held (a task of its
        # own), so that an upstream request can reach the client as an InputRequiredResult (`held_calls.py`).
        held = HeldCall(name, arguments) if modern_client and can_be_asked(ctx.session) else None
        peer = DownstreamPeer(ctx.session, request_id, progress_token(raw_params), ctx.protocol_version,
                              session.log_level, request_log_level(raw_params),
                              self._call_recorder(session.run_id, inv.id, call["id"]), held)
        if held is None:
            return await self._run(session, view, inv, call, name, peer, modern)
        held.peer = peer
        self.held.start(held, self._run(session, view, inv, call, name, peer, modern))
        return await self._deliver(held)

    async def _deliver(self, held: HeldCall) -> types.CallToolResult | types.InputRequiredResult:
        """The held call's result, or the questions its upstream server waits on."""
        result = await held.next()
        if not isinstance(result, types.InputRequiredResult) or result.request_state != held.token:
            self.held.finished(held)
        return result  # type: ignore[no-any-return]

    async def _run(self, session: ServeSession, view: ToolView, inv: Invocation, call: dict[str, Any], name: str,
                   peer: DownstreamPeer, modern: InputRequiredConfirm | None
                   ) -> types.CallToolResult | types.InputRequiredResult:
        """Run the call through the gate and map its result for the client."""
        with collect_results() as upstream, relay_to(peer):
            [result] = await inv.arun([call])
        if modern is not None and (question := modern.input_required()) is not None:
            return question  # the call was held (not run); the client asks its user and retries
        binding = view.by_name.get(name)
        if binding is None and result.error_code == UNKNOWN_TOOL:
            # The spec's protocol error for an unknown tool; the message lists the tools there are. A tool that
            # exists (run_tool included, whatever its target) always answers with a result.
            raise MCPError(types.INVALID_PARAMS, result.content, data={"code": UNKNOWN_TOOL})
        sent = upstream.get(call["id"])
        # a result whose secrets projection replaced goes out as its redacted text, never as the server's blocks
        if sent is not None and result.error_code in RELAYED_ERRORS and result.redaction is None:
            relayed = relayed_call_result(result, sent, inv.run_state.workspace_root, inv.id)
            self.upstream.own_results.note(session.key, result, inv.run_state.workspace_root, inv.id)
            return relayed
        return to_call_result(result, binding.descriptor.output_schema if binding is not None else None)

    # -- upstream resources, prompts, completion (server/upstream.py) -------------------------------
    def upstream_handlers(self) -> dict[str, Any]:
        """The handlers that relay the MCP servers' resources, prompts and completion; none without MCP servers
        (then the capabilities are not declared)."""
        self.upstream = UpstreamRelay(self.runtime)
        if not self.upstream.available:
            return {}
        return {"on_list_resources": self._list_resources, "on_list_resource_templates": self._list_templates,
                "on_read_resource": self._read_resource, "on_list_prompts": self._list_prompts,
                "on_get_prompt": self._get_prompt, "on_completion": self._complete,
                "on_subscribe_resource": self._subscribe, "on_unsubscribe_resource": self._unsubscribe}

    def _call_recorder(self, run_id: str, invocation_id: str, call_id: str
                       ) -> Callable[[str, dict[str, Any]], None] | None:
        """Records what is relayed during one call (a run event naming the invocation and call); None when off."""
        append = getattr(self.runtime.recorder, "append_run_event", None) if self.runtime.recording else None
        if append is None:
            return None

        def record(kind: str, data: dict[str, Any]) -> None:
            append(run_id, kind, {"invocation_id": invocation_id, "call_id": call_id, **data})

        return record

    def _recorder(self, ctx: ServerRequestContext[Any, Any]) -> Callable[[str, dict[str, Any]], None]:
        run_id = self._session(ctx).run_id
        append = getattr(self.runtime.recorder, "append_run_event", None) if self.runtime.recording else None

        def record(kind: str, data: dict[str, Any]) -> None:
            if append is not None:
                append(run_id, kind, data)

        return record

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any],
                              params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources, _ = await self.upstream.list_resources()
        return types.ListResourcesResult(resources=resources)

    async def _list_templates(self, ctx: ServerRequestContext[Any, Any],
                              params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        _, templates = await self.upstream.list_resources()
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any],
                             params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        own = self.upstream.own_results.read(params.uri, self._session(ctx).key)
        if own is not None:
            return own
        return await self.upstream.read(params.uri, self._recorder(ctx))

    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any],
                            params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await self.upstream.list_prompts())

    async def _get_prompt(self, ctx: ServerRequestContext[Any, Any],
                          params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await self.upstream.get_prompt(params.name, params.arguments, self._recorder(ctx))

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any],
                         params: types.SubscribeRequestParams) -> types.EmptyResult:
        session = self._session(ctx)
        await self.upstream.subscribe(params.uri, session.key, ctx.session)
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any],
                           params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        await self.upstream.unsubscribe(params.uri, self._session(ctx).key)
        return types.EmptyResult()

    async def _complete(self, ctx: ServerRequestContext[Any, Any],
                        params: types.CompleteRequestParams) -> types.CompleteResult:
        return await self.upstream.complete(params, self._recorder(ctx))

    # -- transports -------------------------------------------------------------------------------
    def run_stdio_blocking(self, schedules: bool = False) -> None:
        """Serve on stdin/stdout until the client closes stdin (or Ctrl-C/SIGTERM), on the runtime's MCP loop
        (`one_loop.py`); with `schedules`, the home's due schedules run beside it (schedules/runner.py)."""
        serve_on_mcp_loop(self.runtime, lambda: self._beside_schedules(self.run_stdio(), schedules))

    def serve_http_blocking(self, sock: socket.socket, guard: HttpGuard,
                            on_ready: Callable[[], None] | None = None, schedules: bool = False) -> None:
        """`serve_http` until Ctrl-C/SIGTERM (uvicorn's graceful shutdown), on the runtime's MCP loop."""
        serve_on_mcp_loop(self.runtime, lambda: self._beside_schedules(self.serve_http(sock, guard, on_ready),
                                                                       schedules), self._stop_http)

    async def _beside_schedules(self, serving: Coroutine[Any, Any, None], schedules: bool) -> None:
        if not schedules:
            await serving
            return
        from tooldeck.schedules.runner import serving as running_schedules

        async with running_schedules(self.runtime):
            await serving

    def _stop_http(self) -> None:
        self._stop_asked = True
        server = self.http_server
        if server is not None:  # as uvicorn's own signal handler: a second stop forces the exit
            server.force_exit = server.should_exit
            server.should_exit = True

    async def run_stdio(self) -> None:
        async with stdio_streams(self.server, self.options.limits.max_line_bytes) as (read_stream, write_stream):
            await self.server.run(read_stream, write_stream, self.server.create_initialization_options())

    def http_app(self, guard: HttpGuard) -> ASGIApp:
        """The streamable-HTTP ASGI app at `/mcp`, behind the gateway (request checks, body limit, session cap)."""
        limits = self.options.limits
        app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            # The gateway does Host/Origin (loopback by default, configurable); the SDK's own check is
            # stricter about ports and would refuse what the guard allows.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            session_idle_timeout=limits.session_idle_timeout,
            event_store=MemoryEventStore(),
            retry_interval=RETRY_INTERVAL_MS,
            max_request_body_size=limits.max_body_bytes,
            max_sessions=limits.max_sessions + 16,  # a backstop only: the gateway's cap evicts before this refuses
        )
        cap = SessionCap(limits.max_sessions, limits.session_idle_timeout)
        return HttpGateway(app, guard, limits.max_body_bytes, limits.max_header_bytes, cap,
                           on_session_end=self._session_ended, lane=HttpLane(self.server))

    def _session_ended(self, key: str) -> None:
        self.upstream.forget(key)
        self.registry.forget(key)

    async def serve_http(self, sock: socket.socket, guard: HttpGuard,
                         on_ready: Callable[[], None] | None = None) -> None:
        """Serve on an already-bound socket until SIGINT/SIGTERM."""
        import uvicorn

        limits = self.options.limits
        max_connections = connection_cap(limits.max_connections)
        if max_connections < limits.max_connections:
            logger.warning("max_connections lowered from %d to %d to fit the open-file limit (ulimit -n)",
                           limits.max_connections, max_connections)
        limiter = ConnectionLimiter(max_connections, limits.header_timeout, limits.body_timeout)
        config = uvicorn.Config(self.http_app(guard), log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=3, access_log=False,
                                http=limiter.protocol_class(), backlog=ACCEPT_BACKLOG,
                                timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
                                h11_max_incomplete_event_size=limits.max_header_bytes,
                                proxy_headers=False)  # nothing sits in front: X-Forwarded-* are not trusted
        server = self.http_server = _announcing_server_class()(config, on_ready)
        server.should_exit = self._stop_asked
        asyncio.get_running_loop().set_exception_handler(limiter.exception_handler)
        await server.serve(sockets=[sock])


@functools.cache
def _announcing_server_class() -> type[Any]:
    """Made on first use: uvicorn is imported only to serve HTTP."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        """uvicorn's server, calling `on_ready` once it has started: its signal handlers are in place by then, so a
        SIGTERM right after the "serving" line gets the graceful shutdown (before it, asyncio's runner would cancel
        the startup half-way, and uvicorn would log the cancelled lifespan as an error)."""

        def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None] | None) -> None:
            super().__init__(config)
            self.on_ready = on_ready

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and not self.should_exit and self.on_ready is not None:  # not when stopping already
                self.on_ready()

    return AnnouncingServer


async def _notify_list_changed(session: ServeSession) -> None:
    notifier = session.notifier
    if notifier is None:
        return
    try:
        await notifier.send_tool_list_changed()
    except Exception as exc:  # the client went away; notifications are best-effort
        logger.debug("list_changed to session %s dropped: %s", session.key, exc)
