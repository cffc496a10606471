"""One live connection to one MCP server, on the official SDK's `mcp.Client`.

Runs only on the MCP background loop. The `Client` is entered and exited by one holder task (anyio
task groups belong to the task that opened them); calls and listings are made from other tasks on
the same loop. A dead connection (process exited, stream closed) is noticed on the next use and
replaced; the holder catches every failure of the server, so a crashing server never takes
tooldeck down, and turns it into a `Failure` (`failures.classify`) with the evidence this
connection gathered: the HTTP replies (`transport.response_observer`, since the SDK keeps no status),
the stdout lines that were not MCP, and the end of the process's stderr
(`<home>/mcp/logs/<registration>.log`). Listing is `listing.py`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, HEADER_MISMATCH, LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tooldeck.sources.mcp import listing
from tooldeck.sources.mcp.call_notifications import CallNotifications
from tooldeck.sources.mcp.callbacks import ConnectionCallbacks, McpCallbacks, Peer
from tooldeck.sources.mcp.classify import classify
from tooldeck.sources.mcp.config import Endpoint
from tooldeck.sources.mcp.evidence import STDERR_READ_BYTES, Evidence, last_lines
from tooldeck.sources.mcp.failures import ConnectFailed, Failure, Stage, Target, describe
from tooldeck.sources.mcp.output_check import OutputChecks
from tooldeck.sources.mcp.raw_relay import ProgressFn, RawChannel, RawTransport, RequestNotSent
from tooldeck.sources.mcp.transport import open_transport, raw_line

log = logging.getLogger("tooldeck.mcp")

CLIENT_INFO = types.Implementation(name="tooldeck", version="0.1.0")
_SHUTDOWN_WAIT_S = 10.0


class ServerConnection:
    def __init__(self, name: str, endpoint: Endpoint, *, protocol: str, log_path: Path, connect_timeout: float,
                 on_tools_changed: Callable[[], None], target: Target | None = None,
                 host_callbacks: Callable[[], McpCallbacks] = McpCallbacks) -> None:
        self.name = name
        self.connect_timeout = connect_timeout
        self.endpoint = endpoint
        self.protocol = protocol
        self.log_path = log_path
        self.on_tools_changed = on_tools_changed
        self.callbacks = ConnectionCallbacks(name, host_callbacks)
        """Where the server's own requests and notifications during a call go (`callbacks.py`)."""
        self.target = target or Target(name, "", endpoint.transport, endpoint.command or endpoint.url or "",
                                       endpoint.command, endpoint.cwd, endpoint.url, False, connect_timeout,
                                       str(log_path))
        self.client: Client | None = None
        self.failure: Failure | None = None
        """The last failure of this connection (its handshake, or the session ending by itself)."""
        self.evidence = Evidence()
        self._stderr_from: int | None = None
        self.connects = 0
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()
        self._raw: RawTransport | None = None
        """The transport of the current client, with the channel that relays served calls (`raw_relay.py`)."""
        self.listeners: list[Callable[[Any], None]] = []
        self.output_checks = OutputChecks()
        """The output-schema checks of relayed calls, compiled once per tool and schema (`output_check.py`)."""
        """Called with every message the server sends on its own (`resources.Watches` relays resource updates)."""

    # -- state ------------------------------------------------------------------------------------
    def alive(self) -> bool:
        client = self.client
        if client is None or self._holder is None or self._holder.done():
            return False
        raw = self._raw
        if raw is None or raw.channel is None or raw.channel.ended:  # its read stream ended (before the SDK sees it)
            return False
        # mcp 2.3 exposes no public "is closed": the JSON-RPC dispatcher flags EOF of the transport.
        dispatcher = getattr(client.session, "_dispatcher", None)
        return not getattr(dispatcher, "_closed", False)

    @property
    def state(self) -> str:
        if self.alive():
            return "connected"
        holder = self._holder
        if holder is not None and not holder.done() and self.client is None and not holder.cancelling():
            return "connecting"
        return "failed" if self.failure else "idle"

    # -- lifecycle --------------------------------------------------------------------------------
    async def connect(self, timeout: float) -> Client:
        """The live client, connecting (or reconnecting a dead one) first. Raises ConnectFailed."""
        async with self._lock:
            if self.alive():
                assert self.client is not None
                return self.client
            await self._teardown()
            self.evidence.clear()
            loop = asyncio.get_running_loop()
            ready: asyncio.Future[Client] = loop.create_future()
            stop = self._stop = asyncio.Event()
            # A fresh context: the holder outlives the call that happened to connect, and what the SDK spawns
            # from it (server requests over stdio) must not inherit that call's peer (`callbacks.py`).
            self._holder = loop.create_task(self._hold(ready, stop), name=f"mcp-holder:{self.name}",
                                            context=contextvars.Context())
            try:
                async with asyncio.timeout(timeout):
                    client = await asyncio.shield(ready)
            except TimeoutError:
                # Interrupt the handshake; the holder stops the process in the background and the next
                # connect waits for that before starting a new one.
                ready.cancel()
                self._holder.cancel()
                self.failure = self.classify(TimeoutError(f"no MCP handshake within {timeout:g} s"), "connect")
                raise ConnectFailed(self.failure) from None
            except ConnectFailed as exc:
                self.failure = exc.failure
                raise
            self.connects += 1
            self.failure = None
            return client

    async def close(self) -> None:
        async with self._lock:
            await self._teardown()

    async def _teardown(self) -> None:
        holder, stop = self._holder, self._stop
        self._holder = None
        if holder is None or holder.done():
            return
        if self.client is None:
            if not holder.cancelling():  # still connecting: interrupt the handshake (once; a second cancel
                holder.cancel()          # would break the SDK's shielded process shutdown)
        elif stop is not None:
            stop.set()
        done, _ = await asyncio.wait({holder}, timeout=_SHUTDOWN_WAIT_S)
        if not done and not holder.cancelling():
            holder.cancel()
            await asyncio.wait({holder}, timeout=_SHUTDOWN_WAIT_S)

    def classify(self, exc: BaseException, stage: Stage) -> Failure:
        """What `exc` means for this server, with the evidence this connection gathered."""
        self.evidence.stderr[:] = self._stderr_tail()
        return classify(exc, self.evidence, self.target, stage)

    def _stderr_tail(self) -> list[str]:
        """The last lines the server process wrote on stderr since this connection started it."""
        if self.endpoint.transport != "stdio" or self._stderr_from is None:
            return []
        try:
            with self.log_path.open("rb") as fh:
                end = fh.seek(0, os.SEEK_END)
                start = max(self._stderr_from, end - STDERR_READ_BYTES)
                fh.seek(start)
                return last_lines(fh.read(end - start))
        except OSError:
            return []

    def _open_errlog(self) -> IO[str]:
        """The server's stderr log, with a line that marks where this start begins."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        errlog = self.log_path.open("a", encoding="utf-8", errors="replace")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        errlog.write(f"--- {stamp} tooldeck starts: {self.target.command_line}\n")
        errlog.flush()
        self._stderr_from = os.fstat(errlog.fileno()).st_size
        return errlog

    async def _hold(self, ready: asyncio.Future[Client], stop: asyncio.Event) -> None:
        """Enter the client, publish it, wait for `stop`, exit. Never raises."""
        errlog: IO[str] | None = None
        listen: asyncio.Task[None] | None = None
        try:
            if self.endpoint.transport == "stdio":
                errlog = self._open_errlog()
            # The read stream ending by itself (the server's stdout closed, a write to it failed, the SSE stream
            # ended) ends the holder as `stop` does: the process and its pipes go now, not at the next connect.
            ended = asyncio.Event()
            transport = self._raw = RawTransport(open_transport(self.endpoint, errlog, self.connect_timeout,
                                                                self.evidence), on_end=ended.set,
                                                 unsent=self.evidence.unsent.get)
            cb = self.callbacks
            client = Client(transport, mode=self.protocol, cache=None, client_info=CLIENT_INFO,
                            message_handler=self._on_message, sampling_callback=cb.sampling,
                            elicitation_callback=cb.elicitation, list_roots_callback=cb.roots,
                            logging_callback=cb.logging)
            async with client:
                self.client = client
                if not ready.done():
                    ready.set_result(client)
                caps = client.server_capabilities.tools
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS and caps is not None and caps.list_changed:
                    listen = asyncio.get_running_loop().create_task(self._listen(client))
                await _either(stop, ended)
        except BaseException as exc:  # the server's failures end here, whatever they are
            if not ready.done():
                ready.set_exception(ConnectFailed(self.classify(exc, "connect")))
            elif not stop.is_set() and not isinstance(exc, asyncio.CancelledError):
                self.failure = self.classify(exc, "session")
                log.warning("%s [%s]", self.failure.text, self.failure.code)
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
        finally:
            self.client = None
            if listen is not None:
                listen.cancel()
            if errlog is not None:
                errlog.close()

    async def _listen(self, client: Client) -> None:
        """2026-07-28 servers announce list changes only on a `subscriptions/listen` stream; the SDK tees
        them to the message handler, so this just keeps the stream open."""
        with contextlib.suppress(Exception):
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    pass

    async def _on_message(self, message: Any) -> None:
        for listener in self.listeners:
            listener(message)
        if isinstance(message, types.ToolListChangedNotification):
            self.on_tools_changed()
        elif isinstance(message, Exception):  # a stdout line that is not JSON-RPC, or a broken SSE event
            if self.endpoint.transport != "stdio":  # stdio lines are noted as they are read (transport.py)
                self.evidence.add_noise(raw_line(message))
            log.debug("MCP server %s: transport message: %s", self.name, describe(message))

    # -- requests ---------------------------------------------------------------------------------
    async def call_tool(self, name: str, arguments: dict[str, Any], timeout: float,
                        peer: Peer | None = None) -> types.CallToolResult:
        client = self.client
        if client is None:
            raise ConnectFailed(self.classify(MCPError(CONNECTION_CLOSED, "the connection closed before the request "
                                                       "was sent"), "session"))
        raw = self._raw
        channel = raw.channel if raw is not None else None
        if peer is None:  # the library's path: nothing to register
            if channel is None:
                return await client.call_tool(name, arguments, read_timeout_seconds=timeout)
            return await self._relay(client, channel, name, arguments, timeout, None, None)
        # A 2026-07-28 server sends log messages only for requests that opt in (a reserved `_meta` key), at the
        # level the peer's own client wants; handshake-era servers use `logging/setLevel` instead.
        level = getattr(peer, "upstream_log_level", None)
        meta: Any = ({LOG_LEVEL_META_KEY: level}
                     if level is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS else None)
        notifications = CallNotifications(peer)  # the call's progress and log messages, in order and bounded
        with self.callbacks.call(notifications):
            if channel is None:
                result = await client.call_tool(name, arguments, read_timeout_seconds=timeout,
                                                progress_callback=notifications.progress, meta=meta)
            else:
                result = await self._relay(client, channel, name, arguments, timeout, meta, notifications.progress)
            await notifications.drain()  # the client sees what the server sent before the result, in order
            return result

    async def _relay(self, client: Client, channel: RawChannel, name: str, arguments: dict[str, Any],
                     timeout: float, meta: Any, on_progress: ProgressFn | None) -> types.CallToolResult:
        """A call on the raw channel (`raw_relay.py`; served, or the library's): one validation of the result into
        the model the content mapping reads, and the output-schema check the SDK client makes. A 2026-07-28
        header mismatch (the SDK re-lists and resends) or an `InputRequiredResult` (the SDK's driver asks the
        callbacks and retries) go back to the SDK."""
        session = client.session
        try:
            raw = await channel.call(session._stamp, name, arguments, timeout, meta, on_progress)  # type: ignore[arg-type]
        except RequestNotSent as exc:  # no connection could be made for it: a call that was never sent
            raise ConnectFailed(self.classify(exc.cause, "session")) from exc
        except MCPError as exc:
            if exc.code != HEADER_MISMATCH or client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                raise
            return await client.call_tool(name, arguments, read_timeout_seconds=timeout,
                                          progress_callback=on_progress, meta=meta)
        if raw.get("resultType") == "input_required":
            first = types.InputRequiredResult.model_validate(raw, by_name=False)

            async def retry(responses: Any, state: str | None) -> Any:
                return await session.call_tool(name, arguments, read_timeout_seconds=timeout,
                                               progress_callback=on_progress, input_responses=responses,
                                               request_state=state, meta=meta, allow_input_required=True)

            return await client._drive_input_required(first, retry)  # type: ignore[no-any-return]
        result = types.CallToolResult.model_validate(raw, by_name=False)
        if not result.is_error:
            await self.output_checks.check(session, name, result)
        return result

    async def list_tools(self, timeout: float) -> listing.Listing:
        """Every page of tools/list (`listing.py`), as raw tool objects with wire field names."""
        client = self.client
        if client is None:
            raise ConnectFailed(self.classify(MCPError(CONNECTION_CLOSED, "the connection closed before the listing "
                                                       "was requested"), "session"))
        self.evidence.replies.clear()
        return await listing.list_tools(client, timeout)


async def _either(first: asyncio.Event, second: asyncio.Event) -> None:
    """Until one of the two events is set."""
    if first.is_set() or second.is_set():
        return
    waiters = {asyncio.ensure_future(first.wait()), asyncio.ensure_future(second.wait())}
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
