"""Network tools: one `http_request` call through a Runtime (records on, the SSRF guard's connect-time
checks included) against a loopback server, vs bare httpx requests to the same server in the same
run — a new `httpx.AsyncClient` per request (what a tool usually does) and one reused client (the
floor: a kept-alive connection).

    python -m bench.net_bench
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from pathlib import Path

import httpx

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us, expect_ok, report

BODY = b'{"ok": true}'


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                         + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _start_server() -> int:
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    port: list[int] = []

    async def start() -> None:
        server = await asyncio.start_server(_serve, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        ready.set()

    threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True).start()
    ready.wait(10)
    return port[0]


async def main(home: Path) -> None:
    url = f"http://127.0.0.1:{_start_server()}/item"
    rt = tooldeck.Runtime(home=home, profile={"loading": "eager", "allow": ["builtin:http_request"],
                                              "net_allow": ["127.0.0.1"], "max_calls_per_invocation": 10**9,
    "max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation()
    call = [{"id": "h", "name": "http_request", "arguments": {"url": url}}]
    [first] = await inv.arun(call)
    assert not first.is_error, first.content
    kept = httpx.AsyncClient()

    async def tool() -> object:
        return await inv.arun(call)

    async def fresh_client() -> None:
        async with httpx.AsyncClient() as client:
            (await client.get(url)).json()

    async def reused_client() -> None:
        (await kept.get(url)).json()

    rows = await ainterleaved_us({"http_request through tooldeck": tool, "httpx, new client per request":
                                  fresh_client, "httpx, one reused client": reused_client},
                                 inner=20, repeats=15, warmup=5, check=expect_ok)
    print("One GET to a loopback server (median per request):")
    report(rows, "httpx, new client per request")
    base = dict(rows)
    ratio = base["http_request through tooldeck"] / base["httpx, one reused client"]
    print(f"  tooldeck / reused client: {ratio:.2f}×")
    await kept.aclose()
    rt.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
