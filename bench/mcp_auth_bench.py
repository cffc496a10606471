"""What OAuth costs per MCP call: a tooldeck `Runtime` calling `echo` on the OAuth fixture server
(`tests/mcp/fixtures/oauth_server.py`) with the signed-in token sent by tooldeck's OAuth provider
(`sources/mcp/auth.py`: the SDK's auth flow, the expiry check, the stored token) vs the same token sent
as a plain `Authorization` header from the entry (no provider), measured round-robin in one run; and
the provider's own cost per request, an httpx2 client with and without it on an in-memory transport
(no network, no server: what the auth flow adds to every request, beside the same client without it).

    python -m bench.mcp_auth_bench
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2

from bench.timing import REPEATS_ALLOWED, ainterleaved_ms, free_port, wait_port
from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.login import login

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "mcp" / "fixtures" / "oauth_server.py"
INNER = 20
REPEATS = 31


def _home(path: Path, entry: dict[str, Any]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "mcp.json").write_text(json.dumps({"mcpServers": {"web": entry}}), encoding="utf-8")
    return path


async def _browser(url: str) -> None:
    async with httpx2.AsyncClient() as http:
        await http.get(url, follow_redirects=True)


def main() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port)], stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        with tempfile.TemporaryDirectory() as tmp:
            oauth_home = _home(Path(tmp) / "oauth", {"url": url})
            config = cfg.load(oauth_home)
            assert config is not None
            plan = cfg.oauth_plan(config.servers["web"], oauth_home)
            assert plan is not None
            asyncio.run(login(plan, _browser, timeout=60))
            token = json.loads(plan.token_path.read_text())["tokens"]["access_token"]
            header_home = _home(Path(tmp) / "header", {"url": url, "headers": {"Authorization": f"Bearer {token}"}})
            asyncio.run(_measure(oauth_home, header_home))
            asyncio.run(_provider_cost(oauth_home))
    finally:
        proc.terminate()
        proc.wait(10)


async def _measure(oauth_home: Path, header_home: Path) -> None:
    profile = {"allow": ["mcp/*"], "max_calls_per_invocation": 10_000_000,
    "max_identical_calls": REPEATS_ALLOWED}
    with (Runtime(oauth_home, builtins=[], records=False, profile=profile) as with_oauth,
          Runtime(header_home, builtins=[], records=False, profile=profile) as with_header):
        calls = [{"id": "c", "name": "mcp__web__echo", "arguments": {"message": "bench"}}]

        def variant(rt: Runtime) -> Any:
            inv = rt.invocation()

            async def one() -> None:
                [result] = await inv.arun(calls)
                assert result.content == "Echo: bench", result.content

            return one

        rows = await ainterleaved_ms({"header": variant(with_header), "oauth": variant(with_oauth)}, INNER, REPEATS)
    base = rows["header"]
    for name, ms in rows.items():
        print(f"{name:8s} {ms:7.3f} ms  {ms / base:5.2f}x header")


async def _provider_cost(home: Path) -> None:
    from tooldeck.sources.mcp.auth import TooldeckOAuth

    config = cfg.load(home)
    assert config is not None
    plan = cfg.oauth_plan(config.servers["web"], home)
    assert plan is not None

    def answer(_request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})

    transport = httpx2.MockTransport(answer)
    async with (httpx2.AsyncClient(transport=transport) as bare,
                httpx2.AsyncClient(transport=transport, auth=TooldeckOAuth(plan)) as authed):
        def post(client: httpx2.AsyncClient) -> Any:
            async def one() -> None:
                await client.post("http://127.0.0.1/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            return one

        rows = await ainterleaved_ms({"no auth": post(bare), "provider": post(authed)}, 50, REPEATS)
    base = rows["no auth"]
    for name, ms in rows.items():
        print(f"{name:8s} {ms * 1e3:7.1f} us  {ms / base:5.2f}x no auth  (+{(ms - base) * 1e3:.1f} us)")


if __name__ == "__main__":
    main()
