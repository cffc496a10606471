"""MCP call latency: the official client straight to a fixture server vs the same call through tooldeck.

Variants, measured round-robin in one run (medians of batches, so machine load falls on all alike):

- `direct stdio`     mcp.Client → fixture server (stdio), `call_tool("echo")`
- `tooldeck stdio`   Runtime → MCP manager → fixture server (stdio), `await inv.arun([...])` on the host loop
- `tooldeck stdio (sync)`  the same through the sync facade `inv.run([...])`
- `relay stdio`      mcp.Client → a do-nothing Python line relay (`bench/line_relay.py`) → fixture server: the
  floor of any process in the middle of a stdio call on this host; serve's figure less this one is tooldeck's work
- `direct http` / `tooldeck http`  the same against the fixture server over streamable HTTP (127.0.0.1)
- `serve stdio` / `serve http`  mcp.Client → `tooldeck serve` (which proxies the fixture server over stdio), when
  `tooldeck serve` is available; with `--baseline-src DIR` also `base stdio` / `base http`, the same through a
  `tooldeck serve` running another checkout's `src/` (before/after a change, in the same run), and serve ÷ base
  (wall and server CPU): on a shared host a run's ratio to direct moves from one minute to the next, this one less
- `loop hop`   one no-op coroutine through the MCP background loop (run_coroutine_threadsafe + wrap_future)
- `output check`  the output-schema check of one conforming result (the fixture's `echo` schema): the SDK's
  `validate_tool_result` against tooldeck's cached check (`sources/mcp/output_check.py`), µs per result
- `response hook`  what the HTTP response hook that keeps failure evidence costs per POST (a plain MCP
  success, i.e. every call; and a 401, failures only), beside an empty hook, and as a share of the
  direct HTTP call measured in the same run

Targets (issue 12 item 7), as ratios in one run, no fixed allowance: the Runtime path ≤ 1.10 × direct (stdio
and HTTP); client → `tooldeck serve` → server ≤ 1.5 × client → server, records on (serve's default).

Wall-clock ratios on a loaded machine mostly measure the scheduler (each process hop waits for a core), so the
bench also prints the CPU time each server process spent per call (every thread, the scheduler's nanoseconds from
/proc): the fixture's for a direct call, `tooldeck serve`'s own for a served one, and beside it the CPU of the
fixture that serve started (the same `echo`, answered to tooldeck's relay: it costs more behind serve than behind
the client or the do-nothing relay; docs/benchmarks.md, "Serve latency: the floor of a hop", says what is known of
why).

    python -m bench.mcp_bench
    python -m bench.mcp_bench --baseline-src DIR    # e.g. git archive <commit> | tar -x -C /tmp/base; DIR=/tmp/base/src
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.timing import ainterleaved_ms, free_port, wait_port
from tooldeck.runtime import Runtime
from tooldeck.sources.mcp.loop import BackgroundLoop

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "mcp" / "fixtures" / "fixture_server.py"
LINE_RELAY = ROOT / "bench" / "line_relay.py"
PY = sys.executable
INNER = 20
REPEATS = 41
ARGS = {"message": "bench"}
"""The shape of every call's arguments; each call sends its own (`_args`), so the repeated-call guard
(`max_identical_calls`) runs in every variant and refuses none."""
_COUNTER = itertools.count()


def _args() -> dict[str, str]:
    """Distinct arguments for each call (a counter in the message), the same for every variant."""
    return {"message": f"bench {next(_COUNTER)}"}


RUNTIME_TARGET = 1.10
"""The Runtime path (`await inv.arun`) over the direct official-client call."""
SERVE_TARGET = 1.5
"""client → tooldeck serve (records on) → server over client → server."""





def _runtime(home: Path, server: dict[str, Any]) -> Runtime:
    home.mkdir(parents=True, exist_ok=True)
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": server}}), encoding="utf-8")
    return Runtime(home, builtins=[], records=False,
                   profile={"allow": ["mcp/*"], "max_calls_per_invocation": 10_000_000})


def _tooldeck_call(rt: Runtime) -> Callable[[], Awaitable[Any]]:
    inv = rt.invocation()

    async def run() -> Any:
        [result] = await inv.arun([{"id": "b1", "name": "mcp__fx__echo", "arguments": _args()}])
        if result.is_error:
            raise RuntimeError(result.content)
        return result

    return run


def _direct_call(client: Client) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        return await client.call_tool("echo", _args())

    return run


def _serve_call(client: Client) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        result = await client.call_tool("mcp__fx__echo", _args())
        if result.is_error:
            raise RuntimeError(str(result.content))
        return result

    return run


def _children(marker: bytes = b"") -> set[int]:
    """The processes this one started (from /proc), those whose command line holds `marker`."""
    return _children_of(os.getpid(), marker)


def _children_of(parent: int, marker: bytes) -> set[int]:
    """The processes `parent` started whose command line holds `marker` (from /proc)."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == parent \
                        and marker in Path(f"/proc/{entry}/cmdline").read_bytes():
                    out.add(int(entry))
            except OSError:
                continue
    return out


def _cpu_s(pid: int) -> float:
    """CPU time of every thread of `pid`: the scheduler's nanoseconds where the kernel keeps them (/proc's ticks
    are 10 ms), else user + system ticks."""
    if not Path(f"/proc/{pid}/schedstat").exists():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    return total / 1e9


Variants = dict[str, Callable[[], Awaitable[Any]]]


async def interleaved_with_cpu(variants: Variants, middle: dict[str, int], fixture: dict[str, int], inner: int,
                               repeats: int) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """`ainterleaved_ms` of `variants` (wall ms per call), and the CPU per call in µs that each process of `middle`
    and of `fixture` (name → pid: the processes in the middle of the calls, the servers behind them) spent
    meanwhile."""
    middle0, fixture0 = _cpu_by_name(middle), _cpu_by_name(fixture)
    wall = await ainterleaved_ms(variants, inner, repeats)
    calls = repeats * inner + 5  # with ainterleaved_ms's warm-up
    middle_us = {name: (cpu - middle0[name]) / calls * 1e6 for name, cpu in _cpu_by_name(middle).items()}
    fixture_us = {name: (cpu - fixture0[name]) / calls * 1e6 for name, cpu in _cpu_by_name(fixture).items()}
    return wall, middle_us, fixture_us


def _cpu_by_name(pids: dict[str, int]) -> dict[str, float]:
    return {name: _cpu_s(pid) for name, pid in pids.items()}


async def add_direct(stack: AsyncExitStack, variants: Variants, fixture: dict[str, int]) -> None:
    """The variant `direct`: the official client straight to a fixture server (stdio); its pid in `fixture`."""
    before = _children(FIXTURE.name.encode())
    client = await stack.enter_async_context(Client(StdioServerParameters(command=PY, args=[str(FIXTURE)]),
                                                    cache=None))
    [fixture["direct"]] = _children(FIXTURE.name.encode()) - before
    variants["direct"] = _direct_call(client)


async def add_relay(stack: AsyncExitStack, name: str, variants: Variants, middle: dict[str, int],
                    fixture: dict[str, int], env: dict[str, str] | None = None) -> None:
    """The variant `name`: the official client → the line relay (`bench/line_relay.py`, with `env`) → a fixture
    server; the relay's pid in `middle`, the fixture's in `fixture`."""
    before = _children(LINE_RELAY.name.encode())
    client = await stack.enter_async_context(Client(StdioServerParameters(
        command=PY, args=[str(LINE_RELAY), PY, str(FIXTURE)], env=env), cache=None))
    [middle[name]] = _children(LINE_RELAY.name.encode()) - before
    [fixture[name]] = _children_of(middle[name], FIXTURE.name.encode())
    variants[name] = _direct_call(client)


def print_with_cpu(wall: dict[str, float], middle: dict[str, float], fixture: dict[str, float], inner: int,
                   repeats: int) -> None:
    """One line per variant: wall ms per call, as a ratio to `direct`, and the CPU of the processes of the call."""
    direct = wall["direct"]
    width = max(map(len, wall))
    print(f"median call_tool latency (batches of {inner}, {repeats} batches, round-robin; load average "
          f"{os.getloadavg()[0]:.1f})")
    for name, ms in wall.items():
        own = f"   middle CPU {middle[name]:5.0f} µs/call" if name in middle else " " * 27
        print(f"  {name:<{width}} {ms:6.3f} ms  {ms / direct:5.2f}× direct{own}   fixture CPU {fixture[name]:5.0f} "
              "µs/call")


def _serve_available() -> bool:
    exe = shutil.which("tooldeck") or str(Path(PY).with_name("tooldeck"))
    try:
        out = subprocess.run([exe, "serve", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "--stdio" in out.stdout


async def _serve_variants(stack: AsyncExitStack, tmp: Path, label: str, env: dict[str, str],
                          variants: dict[str, Callable[[], Awaitable[Any]]], pids: dict[str, int],
                          procs: list[subprocess.Popen[bytes]]) -> None:
    """`<label> stdio` and `<label> http`: an official client → `tooldeck serve` (records on) → the fixture (stdio)."""
    exe = str(Path(PY).with_name("tooldeck"))
    home = tmp / label
    _runtime(home, {"command": PY, "args": [str(FIXTURE)]}).close()
    (home / "profile.toml").write_text('loading = "eager"\n')  # tools called by name
    before = _children(b"serve")
    client = await stack.enter_async_context(Client(StdioServerParameters(
        command=exe, args=["serve", "--stdio", "--home", str(home), "--scene", "chat"], env=env), cache=None))
    [pids[f"{label} stdio"]] = _children(b"serve") - before
    variants[f"{label} stdio"] = _serve_call(client)
    port = free_port()
    proc = subprocess.Popen([exe, "serve", "--http", f"127.0.0.1:{port}", "--home", str(home), "--scene", "chat"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    procs.append(proc)
    pids[f"{label} http"] = proc.pid
    wait_port(port)
    client = await stack.enter_async_context(Client(f"http://127.0.0.1:{port}/mcp", cache=None))
    variants[f"{label} http"] = _serve_call(client)


async def measure(tmp: Path, baseline_src: str | None = None) -> tuple[dict[str, float], float, float]:
    port = free_port()
    http_server = subprocess.Popen([PY, str(FIXTURE), "--http", str(port)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
    procs: list[subprocess.Popen[bytes]] = [http_server]
    pids: dict[str, int] = {}  # the server process of a variant that has one of its own (not the shared HTTP fixture)
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        stdio_rt = _runtime(tmp / "stdio", {"command": PY, "args": [str(FIXTURE)]})
        http_rt = _runtime(tmp / "http", {"url": url})
        variants: dict[str, Callable[[], Awaitable[Any]]] = {}
        results = await _interleaved(tmp, url, stdio_rt, http_rt, variants, pids, procs, baseline_src)
        sync_ms = await asyncio.to_thread(_sync_facade, stdio_rt)
        hop_us = await _hop_us()
        results["hooks"] = await _hook_us()  # type: ignore[assignment]
        results["output check"] = await _output_check_us()  # type: ignore[assignment]
        results["body bound"] = await _bound_us()  # type: ignore[assignment]
        stdio_rt.close()
        http_rt.close()
        return results, sync_ms, hop_us
    finally:
        for proc in procs:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:  # uvicorn may wait on open streams; the figures are in
                    proc.kill()
                    proc.wait(5)


async def _interleaved(tmp: Path, url: str, stdio_rt: Runtime, http_rt: Runtime,
                       variants: dict[str, Callable[[], Awaitable[Any]]], pids: dict[str, int],
                       procs: list[subprocess.Popen[bytes]], baseline_src: str | None) -> dict[str, float]:
    """Every variant, round-robin; the figures are returned even when closing a client fails afterwards."""
    results: dict[str, float] = {}
    try:
        async with AsyncExitStack() as stack:
            before = _children(FIXTURE.name.encode())
            direct = await stack.enter_async_context(
                Client(StdioServerParameters(command=PY, args=[str(FIXTURE)]), cache=None))
            [pids["direct stdio"]] = _children(FIXTURE.name.encode()) - before
            variants["direct stdio"] = _direct_call(direct)
            behind_relay: dict[str, int] = {}
            await add_relay(stack, "relay stdio", variants, pids, behind_relay)
            pids["relay stdio upstream"] = behind_relay["relay stdio"]
            direct_http = await stack.enter_async_context(Client(url, cache=None))
            variants["tooldeck stdio"] = _tooldeck_call(stdio_rt)
            variants["direct http"] = _direct_call(direct_http)
            variants["tooldeck http"] = _tooldeck_call(http_rt)
            if _serve_available():
                await _serve_variants(stack, tmp, "serve", dict(os.environ), variants, pids, procs)
                if baseline_src is not None:
                    await _serve_variants(stack, tmp, "base", {**os.environ, "PYTHONPATH": baseline_src}, variants,
                                          pids, procs)
            for fn in variants.values():  # warm up outside the CPU window
                for _ in range(5):
                    await fn()
            for name in [name for name in pids if name.startswith(("serve ", "base "))]:
                # the fixture each serve started (after a call: a server is spawned when first needed)
                upstream = _children_of(pids[name], FIXTURE.name.encode())
                if len(upstream) == 1:
                    pids[f"{name} upstream"] = upstream.pop()
            results, cpu_us, _ = await interleaved_with_cpu(variants, pids, {}, INNER, REPEATS)
            results.update({f"cpu {name}": us / 1e3 for name, us in cpu_us.items()})
    except Exception as exc:  # a client that fails to close after the run (a server gone first) loses no figure
        if not results:
            raise
        print(f"warning: closing the clients failed after the run: {exc!r}", file=sys.stderr)
    return results


def _sync_facade(rt: Runtime) -> float:
    inv = rt.invocation()

    def calls() -> list[dict[str, Any]]:
        return [{"id": "s1", "name": "mcp__fx__echo", "arguments": _args()}]

    for _ in range(5):
        inv.run(calls())
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(INNER):
            inv.run(calls())
        samples.append((time.perf_counter() - start) / INNER * 1e3)
    return statistics.median(samples)


async def _hook_us() -> tuple[float, float, float]:
    """(empty hook, evidence hook on a 200 JSON reply, on a 401 with a challenge), µs per response."""
    import httpx2

    from tooldeck.sources.mcp.evidence import Evidence
    from tooldeck.sources.mcp.transport import response_observer

    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "echo", "arguments": ARGS}}).encode()
    request = httpx2.Request("POST", "http://127.0.0.1:8000/mcp", content=body)
    ok = httpx2.Response(200, headers={"content-type": "application/json"}, request=request)
    refused = httpx2.Response(401, headers={"content-type": "application/json",
                                            "www-authenticate": 'Bearer error="invalid_token"'}, request=request)
    observe = response_observer(Evidence())

    async def empty(_response: Any) -> None:
        return None

    async def per_response(hook: Callable[[Any], Awaitable[None]], response: Any) -> float:
        samples = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(2_000):
                await hook(response)
            samples.append((time.perf_counter() - start) / 2_000 * 1e6)
        return statistics.median(samples)

    return await per_response(empty, ok), await per_response(observe, ok), await per_response(observe, refused)


async def _bound_us() -> tuple[float, float]:
    """(reading a JSON reply of an `echo` result, the same through `bounded_bodies`), µs of CPU per reply: the
    bound's cost on every HTTP call (a reply whose Content-Length is within the bound and not compressed is not
    counted, only looked at)."""
    import httpx2

    from tooldeck.sources.mcp.evidence import Evidence
    from tooldeck.sources.mcp.transport import bounded_bodies

    body = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "Echo: bench"}],
                                                               "isError": False}}).encode()
    request = httpx2.Request("POST", "http://127.0.0.1:8000/mcp", content=b"{}")
    headers = {"content-type": "application/json", "content-length": str(len(body))}
    bound = bounded_bodies(Evidence())

    class Body(httpx2.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield body

    async def plain() -> None:
        await httpx2.Response(200, headers=headers, stream=Body(), request=request).aread()

    async def bounded() -> None:
        response = httpx2.Response(200, headers=headers, stream=Body(), request=request)
        await bound(response)
        await response.aread()

    samples: dict[Callable[[], Awaitable[None]], list[float]] = {plain: [], bounded: []}
    for read in samples:
        for _ in range(300):
            await read()
    for _ in range(REPEATS):
        for read, kept in samples.items():  # alternately, so the host's swings touch both alike
            start = time.thread_time()
            for _ in range(500):
                await read()
            kept.append((time.thread_time() - start) / 500 * 1e6)
    return statistics.median(samples[plain]), statistics.median(samples[bounded])


async def _output_check_us() -> tuple[float, float]:
    """(the SDK's check, the cached check) of one conforming `echo` result, µs per result."""
    import anyio
    import mcp_types
    from mcp.client.session import ClientSession

    from tooldeck.sources.mcp.output_check import OutputChecks

    _send, receive = anyio.create_memory_object_stream(1)
    send, _receive = anyio.create_memory_object_stream(1)
    session = ClientSession(receive, send)
    session._tool_output_schemas["echo"] = {"properties": {"result": {"title": "Result", "type": "string"}},
                                            "required": ["result"], "title": "echoOutput", "type": "object"}
    result = mcp_types.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": "bench"}], "structuredContent": {"result": "bench"}}, by_name=False)
    checks = OutputChecks()

    async def cached(name: str, r: Any) -> None:
        await checks.check(session, name, r)

    async def per_result(check: Callable[[str, Any], Awaitable[None]]) -> float:
        for _ in range(200):
            await check("echo", result)
        samples = []
        for _ in range(REPEATS):
            start = time.thread_time()
            for _ in range(500):
                await check("echo", result)
            samples.append((time.thread_time() - start) / 500 * 1e6)
        return statistics.median(samples)

    return await per_result(session.validate_tool_result), await per_result(cached)


async def _hop_us() -> float:
    loop = BackgroundLoop("bench-hop")

    async def noop() -> None:
        return None

    try:
        for _ in range(100):
            await loop.run(noop())
        samples = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(200):
                await loop.run(noop())
            samples.append((time.perf_counter() - start) / 200 * 1e6)
        return statistics.median(samples)
    finally:
        loop.stop()


def main(baseline_src: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results, sync_ms, hop_us = asyncio.run(measure(Path(tmp), baseline_src))
    empty_us, ok_us, refused_us = results.pop("hooks")  # type: ignore[misc]
    sdk_check_us, cached_check_us = results.pop("output check")  # type: ignore[misc]
    plain_read_us, bounded_read_us = results.pop("body bound")  # type: ignore[misc]
    cpu = {name.removeprefix("cpu "): results.pop(name) for name in list(results) if name.startswith("cpu ")}
    print(f"median call_tool latency, ms (batches of {INNER}, {REPEATS} batches, round-robin; load average "
          f"{os.getloadavg()[0]:.1f})")
    for name, ms in results.items():
        extra = f"   server process CPU {cpu[name]:6.3f} ms/call" if name in cpu else ""
        if f"{name} upstream" in cpu:
            extra += f", its upstream fixture's {cpu[f'{name} upstream']:6.3f}"
        print(f"  {name:<24} {ms:7.3f} ms{extra}")
    print(f"  {'tooldeck stdio (sync)':<24} {sync_ms:7.3f} ms")
    print(f"  {'loop hop (no-op)':<24} {hop_us / 1000:7.3f} ms  ({hop_us:.0f} µs)")
    for transport in ("stdio", "http"):
        direct = results[f"direct {transport}"]
        for variant, target in (("tooldeck", RUNTIME_TARGET), ("serve", SERVE_TARGET), ("base", SERVE_TARGET)):
            ours = results.get(f"{variant} {transport}")
            if ours is None:
                continue
            verdict = "meets" if ours <= target * direct else f"MISSES by {ours / direct - target:.2f}×"
            print(f"  {transport}: {variant} {ours:.3f} ms vs direct {direct:.3f} ms = {ours / direct:.2f}×, "
                  f"+{ours - direct:.3f} ms; target ≤ {target:.2f}×: {verdict}")
        base = results.get(f"base {transport}")
        served = results.get(f"serve {transport}")
        relay = results.get(f"relay {transport}")
        if relay is not None:  # what the hop alone costs, and what tooldeck adds on top of it (same run)
            tail = f"; serve − relay = +{served - relay:.3f} ms of tooldeck's own work" if served is not None else ""
            print(f"  {transport}: relay (a do-nothing Python hop) {relay / direct:.2f}× direct{tail}")
        if base is not None and served is not None:  # the comparison this host's noise leaves standing
            print(f"  {transport}: serve ÷ base {served / base:.2f}× wall, "
                  f"{cpu[f'serve {transport}'] / cpu[f'base {transport}']:.2f}× server process CPU (same run)")
    print(f"  output-schema check of a conforming result: the SDK's {sdk_check_us:.2f} µs, cached "
          f"{cached_check_us:.2f} µs ({cached_check_us / sdk_check_us:.2f}×)")
    added = ok_us - empty_us
    print(f"  response hook per POST: empty {empty_us:.2f} µs, plain MCP success {ok_us:.2f} µs (+{added:.2f} µs = "
          f"{added / (results['direct http'] * 1e3) * 100:.3f} % of a direct HTTP call), a 401 {refused_us:.2f} µs")
    bound_us = bounded_read_us - plain_read_us
    print(f"  message bound per JSON reply: read {plain_read_us:.2f} µs, through bounded_bodies "
          f"{bounded_read_us:.2f} µs (+{bound_us:.2f} µs = "
          f"{bound_us / (results['direct http'] * 1e3) * 100:.3f} % of a direct HTTP call)")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--baseline-src":
        main(str(Path(sys.argv[2]).resolve()))
    else:
        main()
