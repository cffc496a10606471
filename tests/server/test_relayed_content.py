"""A proxied tool's result reaches the MCP client of `tooldeck serve` as its server sent it: image, embedded
resource, resource link, text, structuredContent, isError; a text over the inline limit is spilled (preview, plus
a resource link to the full text). The records still hold the call, with the flattened projection. Real
`tooldeck serve` processes in front of the SDK fixture server, official client, stdio and HTTP."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.server.support import http_server, serve_client
from tooldeck.records.store import SqliteRecorder

FIXTURE = Path(__file__).resolve().parents[1] / "mcp" / "fixtures" / "fixture_server.py"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable,
                                                                     "args": [str(FIXTURE), "--media"]}}}))
    (home / "profile.toml").write_text("result_inline_limit = 4000\n")
    return home




async def _wait(client: Client, name: str) -> None:
    with anyio.fail_after(30):
        while True:
            tools = (await client.list_tools()).tools
            if any(name == t.name or name in (t.description or "") for t in tools):
                return
            await anyio.sleep(0.2)


@pytest.mark.parametrize(("transport", "loading"), [("stdio", "eager"), ("http", "deferred")])
async def test_blocks_reach_the_client_as_sent(tmp_path: Path, transport: str, loading: str) -> None:
    home = _home(tmp_path)
    async with serve_client(home, transport, "--loading", loading) as client:
        if loading == "eager":
            await _wait(client, "mcp__fx__image")

            async def call(tool: str, args: dict[str, Any]) -> types.CallToolResult:
                return await client.call_tool(f"mcp__fx__{tool}", args)
        else:
            await _wait(client, "mcp__fx__{")
            await client.call_tool("find_tools", {"names": [f"mcp__fx__{t}" for t in
                                                            ("image", "resources", "summary", "fail", "big", "media")]})

            async def call(tool: str, args: dict[str, Any]) -> types.CallToolResult:
                return await client.call_tool("run_tool", {"name": f"mcp__fx__{tool}", "args": args})

        image = await call("image", {})
        resources = await call("resources", {})
        summary = await call("summary", {"city": "Oslo"})
        failed = await call("fail", {"reason": "nope"})
        big = await call("big", {"chars": 20_000})
        media = await call("media", {})
        full = await client.read_resource(big.content[1].uri)  # the spilled text, served by tooldeck itself

    assert [b.type for b in image.content] == ["text", "image"]
    assert image.content[0].text == "A red pixel."
    assert image.content[1].mime_type == "image/png" and base64.b64decode(image.content[1].data)[:4] == b"\x89PNG"
    assert (image.meta or {})["tooldeck/tool_id"].endswith(":image") and image.is_error is False

    embedded, link = resources.content
    assert embedded.type == "resource" and embedded.resource.uri == "memo://notes/1"
    assert embedded.resource.text == "The notes." and embedded.resource.mime_type == "text/plain"
    assert link.type == "resource_link" and link.uri == "memo://notes/2" and link.name == "second note"

    audio, blob, text = media.content
    assert audio.type == "audio" and audio.mime_type == "audio/wav" and base64.b64decode(audio.data)[:4] == b"RIFF"
    assert blob.type == "resource" and blob.resource.uri == "memo://blob/1"
    assert base64.b64decode(blob.resource.blob) == b"\x00\x01" and text.text == "Some media."
    assert (media.meta or {})["fixture/trace"] == "t-1" and (media.meta or {})["tooldeck/tool_id"].endswith(":media")

    assert summary.content[0].text == "Weather in Oslo: sunny."
    assert summary.structured_content == {"city": "Oslo", "temperature_c": 21.5,
                                          "wind": {"speed_kmh": 12, "dir": "NW"}}

    assert failed.is_error is True and "the tool failed: nope" in failed.content[0].text
    assert (failed.meta or {})["tooldeck/error_code"] == "mcp.tool_error"

    # over the inline limit: the preview and where the full text is, plus a link the client can open here
    assert [b.type for b in big.content] == ["text", "resource_link"]
    assert big.content[0].text.startswith("This tool result is too large to include in full (20000 characters)")
    assert big.content[1].uri.startswith("tooldeck://tool-results/") and big.content[1].name in big.content[0].text
    [text] = full.contents
    assert text.uri == big.content[1].uri and text.mime_type == "text/plain"
    assert len(text.text.replace("\n", "")) >= 20_000 - 20_000 // 37 and len(text.text) == big.content[1].size

    store = SqliteRecorder(home / "records.sqlite")
    try:
        calls = [c for s in store.list_invocations(200) for c in store.history(s.invocation_id).calls]
    finally:
        store.close()
    recorded = [c for c in calls if c.tool_id.endswith(":image") and c.result is not None]
    assert len(recorded) == 1
    assert "[image 2: image/png, 70 bytes, saved at" in recorded[0].result.content  # the library's projection


@pytest.mark.parametrize("path", ["../../../../etc/hostname", "tool-results/inv_other/x.txt",
                                  "tool-results/inv_1/../../../../etc/hostname", "tool-results/inv_1/missing.txt"])
def test_an_upstream_structure_that_looks_like_a_spill_is_relayed_as_is(tmp_path: Path, path: str) -> None:
    """The server's own structuredContent may say `externalized` and name any path: only a file the projector
    wrote for this invocation becomes a link; otherwise the blocks go out as sent."""
    from tooldeck.core.results import AgentToolResult
    from tooldeck.server.mapping import relayed_call_result

    marker = {"externalized": True, "path": path, "char_count": 9}
    upstream = types.CallToolResult(content=[types.TextContent(type="text", text="as sent")],
                                    structured_content=marker)
    result = AgentToolResult("c1", "mcp/fx-1:t", "as sent", marker, False, None, [path])
    out = relayed_call_result(result, upstream, tmp_path, "inv_1")
    assert [b.type for b in out.content] == ["text"] and out.content[0].text == "as sent"
    assert out.structured_content == marker


def test_a_real_spill_becomes_a_link(tmp_path: Path) -> None:
    from tooldeck.core.results import AgentToolResult
    from tooldeck.server.mapping import relayed_call_result

    rel = "tool-results/inv_1/round-001-c1.txt"
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_text("x" * 9)
    marker = {"externalized": True, "path": rel, "char_count": 9}
    upstream = types.CallToolResult(content=[types.TextContent(type="text", text="x" * 9)])
    out = relayed_call_result(AgentToolResult("c1", "t", "preview", marker, False, None, [rel]), upstream,
                              tmp_path, "inv_1")
    assert [b.type for b in out.content] == ["text", "resource_link"] and out.content[0].text == "preview"
    assert out.content[1].uri == f"tooldeck://{rel}" and out.content[1].size == 9


async def test_a_spilled_result_is_readable_only_by_its_own_session(tmp_path: Path) -> None:
    home = _home(tmp_path)
    with http_server(home, "--loading", "eager") as served:
        async with Client(served.url, mode="legacy", read_timeout_seconds=30) as one, \
                Client(served.url, mode="legacy", read_timeout_seconds=30) as two:
            await _wait(one, "mcp__fx__big")
            big = await one.call_tool("mcp__fx__big", {"chars": 20_000})
            uri = big.content[-1].uri
            assert (await one.read_resource(uri)).contents[0].text  # type: ignore[union-attr]
            for other, target in ((two, uri), (one, uri.replace("round-", "x-")),
                                  (one, "tooldeck://tool-results/../../etc/hostname")):
                with pytest.raises(MCPError) as info:
                    await other.read_resource(target)
                assert info.value.code == -32002 and info.value.data["code"] == "serve.result_unknown"
