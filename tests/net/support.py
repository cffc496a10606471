"""A loopback HTTP/1.1 server for the network tools' tests: scripted answers per path, and a log of
every connection and request it received (so a test can assert that a refused request never arrived)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Seconds to wait before answering (a slow server)."""


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class LoopbackServer:
    port: int = 0
    answers: dict[str, Answer] = field(default_factory=dict)
    connections: int = 0
    closed: int = 0
    """Connections whose client went away (or that the server closed)."""
    requests: list[Seen] = field(default_factory=list)
    _handlers: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append(Seen(method, path, headers, body))
                answer = self.answers.get(path.split("?", 1)[0], Answer(404, b"not found"))
                if answer.delay_s:
                    await asyncio.sleep(answer.delay_s)
                extra = "".join(f"{k}: {v}\r\n" for k, v in answer.headers.items())
                writer.write(f"HTTP/1.1 {answer.status} X\r\ncontent-length: {len(answer.body)}\r\n{extra}\r\n"
                             .encode("latin-1") + answer.body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed += 1
            writer.close()
            self._handlers.discard(task)


@contextmanager
def loopback_server(answers: dict[str, Answer] | None = None) -> Iterator[LoopbackServer]:
    """A server on 127.0.0.1 (an ephemeral port) on its own thread and event loop."""
    server = LoopbackServer(answers=dict(answers or {}))
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, asyncio.base_events.Server] = {}

    async def start() -> None:
        holder["s"] = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        server.port = holder["s"].sockets[0].getsockname()[1]
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield server
    finally:
        async def stop() -> None:
            holder["s"].close()
            handlers = list(server._handlers)  # connections a client keeps alive
            for task in handlers:
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
