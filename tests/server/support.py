"""Start `tooldeck serve` as a real subprocess and talk to it."""

from __future__ import annotations

import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import h11
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

if TYPE_CHECKING:
    from tooldeck.server.mcp_server import TooldeckMCPServer

TOOLDECK = str(Path(sys.executable).with_name("tooldeck"))
ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0


@contextmanager
def serving_in_thread(mcp: TooldeckMCPServer, on_ready: Callable[[], None] | None = None
                      ) -> Iterator[tuple[threading.Thread, str]]:
    """`mcp.serve_http` on a loopback port in a thread of this process (to look inside the server); yields the
    thread and the endpoint URL. At the end the server is asked to stop, and its socket and runtime are closed."""
    from tooldeck.server.address import HttpAddress, bind_socket
    from tooldeck.server.security import HttpGuard

    sock = bind_socket(HttpAddress("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"  # before the start: a stopped server closes its socket
    thread = threading.Thread(target=anyio.run, args=(mcp.serve_http, sock, HttpGuard.build("127.0.0.1"), on_ready))
    thread.start()
    try:
        yield thread, url
    finally:
        if mcp.http_server is not None:
            mcp.http_server.should_exit = True
        thread.join(30)
        sock.close()
        mcp.runtime.close()


@dataclass
class Served:
    url: str
    proc: subprocess.Popen[str]
    log: Path | None = None
    """stderr of the server, when `http_server` was given `log=`."""

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.log is not None else ""


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TOOLDECK_TOKEN"}
    env.update(extra or {})
    return env


def _limit_files(n: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    return apply


@contextmanager
def http_server(home: Path, *args: str, env: dict[str, str] | None = None, log: Path | None = None,
                nofile: int | None = None) -> Iterator[Served]:
    """`tooldeck serve --http 127.0.0.1:0 …` until the block ends; yields the URL it printed. `log` sends the
    server's stderr to a file (readable while it runs); `nofile` is its `ulimit -n`."""
    argv = [TOOLDECK, "serve", "--home", str(home), "--http", "127.0.0.1:0", *_eager(args)]
    with served_process(argv, env=env, log=log, nofile=nofile) as served:
        yield served


@contextmanager
def served_process(argv: list[str], env: dict[str, str] | None = None, log: Path | None = None,
                   nofile: int | None = None) -> Iterator[Served]:
    """Run a server that prints `... serving MCP on URL` on its first stdout line, until the block ends."""
    err = log.open("w") if log is not None else subprocess.PIPE
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=_env(env), cwd=ROOT,
                            preexec_fn=_limit_files(nofile) if nofile is not None else None)
    if log is not None:
        err.close()  # type: ignore[union-attr]
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                line = proc.stdout.readline()
                break
        if " serving MCP on http://" not in line:
            if proc.poll() is None:
                proc.kill()
            _, out = proc.communicate(timeout=10)
            out = out or (log.read_text() if log is not None else "")
            raise AssertionError(f"{argv[0]} printed no URL (exit {proc.returncode}): {line!r}\n{out}")
        yield Served(line.split(" on ", 1)[1].split()[0], proc, log)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str], timeout: float = 15.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return proc.returncode


def stdio_params(home: Path, *args: str, default_loading: bool = False) -> StdioServerParameters:
    """`default_loading` keeps serve's own default (deferred); otherwise tools are served eagerly so the
    tests can call them by name."""
    argv = list(args) if default_loading else _eager(args)
    return StdioServerParameters(command=TOOLDECK, args=["serve", "--stdio", "--home", str(home), *argv],
                                 env=_env(None))


def _eager(args: tuple[str, ...]) -> list[str]:
    return list(args) if "--loading" in args else [*args, "--loading", "eager"]


def write_serve_config(home: Path, **values: object) -> None:
    """`<home>/tooldeck.toml` with a `[serve]` table of these keys."""
    home.mkdir(parents=True, exist_ok=True)
    lines = ["[serve]"] + [f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in values.items()]
    (home / "tooldeck.toml").write_text("\n".join(lines) + "\n")


def recorded_calls(home: Path, tool_suffix: str) -> list[Any]:
    """The calls recorded in `home` (its latest 50 invocations) of the tools whose id ends with `tool_suffix`."""
    from tooldeck.records.store import SqliteRecorder

    store = SqliteRecorder(home / "records.sqlite")
    try:
        return [c for s in store.list_invocations(50) for c in store.history(s.invocation_id).calls
                if c.tool_id.endswith(tool_suffix)]
    finally:
        store.close()


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes = b""
    closed: bool = False
    """The server closed the connection after this response."""
    events: list[bytes] = field(default_factory=list)

    def json(self) -> object:
        import orjson

        return orjson.loads(self.body)


def read_response(sock: socket.socket, method: bytes = b"POST", timeout: float = 15.0,
                  stream_wait: float = 0.3) -> RawResponse | None:
    """Read one HTTP response from `sock` (h11 parses it); None when the server closed without answering.
    An event stream that stays open is read for `stream_wait` seconds after its headers."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target="/", headers=[("host", "x")]))
    conn.send(h11.EndOfMessage())
    sock.settimeout(timeout)
    response: RawResponse | None = None
    body = bytearray()
    deadline = time.monotonic() + timeout
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            streaming = response is not None and response.headers.get("content-type", "").startswith("text/event")
            if streaming:
                sock.settimeout(max(0.01, stream_wait))
            try:
                data = sock.recv(65536)
            except TimeoutError:
                if streaming:
                    break
                raise
            except ConnectionResetError:
                data = b""
            if not data and response is None:
                return None
            conn.receive_data(data)
            if not data:
                if response is not None:
                    response.closed = True
                break
            if time.monotonic() > deadline:
                raise TimeoutError("response did not finish")
        elif isinstance(event, h11.Response):
            if event.status_code < 200:
                continue
            response = RawResponse(event.status_code, {k.decode(): v.decode("latin-1") for k, v in event.headers})
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            break
    if response is None:
        return None
    response.body = bytes(body)
    response.events = [line[5:].strip() for line in response.body.split(b"\n") if line.startswith(b"data:")]
    if conn.their_state is h11.MUST_CLOSE or response.headers.get("connection", "").lower() == "close":
        try:
            sock.settimeout(2)
            response.closed = response.closed or sock.recv(1) == b""
        except (TimeoutError, ConnectionResetError):
            response.closed = True
    return response


def exchange(port: int, request: bytes, timeout: float = 15.0, stream_wait: float = 0.3) -> RawResponse | None:
    """Send raw request bytes on a new connection and read the response (an event stream: see `read_response`)."""
    method = request.split(b" ", 1)[0] or b"GET"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        return read_response(sock, method, timeout, stream_wait)


def http_request(method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    """Raw HTTP/1.1 request bytes: exactly these headers (duplicates kept), plus Content-Length for a body."""
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers)]
    if body and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@asynccontextmanager
async def serve_client(home: Path, transport: str, *args: str, **client_options: Any) -> AsyncIterator[Client]:
    """An MCP client session with `tooldeck serve --home home *args`, over stdio (a child process the
    client starts) or streamable HTTP on 127.0.0.1 (`http_server`); `client_options` go to `Client`."""
    with ExitStack() as stack:
        if transport == "stdio":
            target: Any = stdio_client(stdio_params(home, *args))
        else:
            target = stack.enter_context(http_server(home, *args)).url
        async with Client(target, mode="legacy", read_timeout_seconds=30, **client_options) as client:
            yield client


class ElicitingUser:
    """The elicitation callback of a client in front of `tooldeck serve`: gives `answer` and keeps what it was asked."""

    def __init__(self, answer: types.ElicitResult) -> None:
        self.answer = answer
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, _ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return self.answer
