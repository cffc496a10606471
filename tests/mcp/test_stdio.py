"""The fixture server over stdio, through the whole Runtime: discovery, calls, content, permissions, cache."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tooldeck.core.ids import ToolId
from tooldeck.runtime import Runtime

from .conftest import call, fixture_server, write_mcp_json, write_toml


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("stdio-home")
    write_mcp_json(home, {"fx": fixture_server("--probes")})
    write_toml(home, "[mcp.servers.fx.tools]\nadd = 'ask'\npid = 'off'\n")
    return home


@pytest.fixture(scope="module")
def rt(home: Path) -> Iterator[Runtime]:
    runtime = Runtime(home, records=True)
    yield runtime
    runtime.close()


def test_discovered_at_start_and_cached(rt: Runtime, home: Path) -> None:
    assert rt.mcp is not None
    [status] = rt.mcp.status()
    assert status.name == "fx" and status.state == "connected" and status.tools_total >= 14
    assert (home / "mcp" / "catalogs" / f"{status.registration_id}.json").is_file()
    inv = rt.invocation()
    names = inv.call_names()
    assert names["mcp__fx__echo"] == f"mcp/{status.registration_id}:echo"
    assert "mcp__fx__pid" not in names  # permission `off`: not offered
    schema = next(t for t in inv.tools() if t["function"]["name"] == "mcp__fx__add")["function"]["parameters"]
    assert schema["properties"].keys() == {"a", "b"}
    assert not [d for d in inv.diagnostics if d.code.startswith("mcp.")]


def test_call_text_and_numbers(rt: Runtime) -> None:
    inv = rt.invocation()
    echo = call(inv, "mcp__fx__echo", {"message": "hi"})
    assert (echo.content, echo.is_error) == ("Echo: hi", False)
    bad = call(inv, "mcp__fx__echo", {"message": 5})  # the gate validates against the server's schema
    assert bad.error_code == "tool.invalid_arguments"


def test_structured_image_resources_empty(rt: Runtime) -> None:
    inv = rt.invocation()
    weather = call(inv, "mcp__fx__weather", {"city": "Oslo"})
    assert '"city": "Oslo"' in weather.content and "## Details" not in weather.content
    assert weather.structured["conditions"] == "sunny"
    summary = call(inv, "mcp__fx__summary", {"city": "Oslo"})
    assert summary.content.startswith("Weather in Oslo: sunny.\n\n## Details\n\n```json")
    image = call(inv, "mcp__fx__image")
    [ref] = image.resource_refs
    assert ref.startswith(f"tool-results/{inv.id}/") and ref.endswith(".png")
    assert (inv.run_state.workspace_root / ref).read_bytes().startswith(b"\x89PNG")
    assert image.content.startswith("A red pixel.\n\n[image 2: image/png")
    res = call(inv, "mcp__fx__resources")
    assert "memo://notes/1" in res.content and "## Resource links" in res.content
    assert call(inv, "mcp__fx__nothing").content == "The tool completed without returning content."


def test_tool_error_and_server_error(rt: Runtime) -> None:
    inv = rt.invocation()
    failed = call(inv, "mcp__fx__fail", {"reason": "disk full"})
    assert failed.is_error and failed.error_code == "mcp.tool_error" and "disk full" in failed.content
    rpc = call(inv, "mcp__fx__rpc_error")
    assert rpc.is_error and rpc.error_code == "mcp.server_error"
    assert "-32602" in rpc.content and "the fixture rejects this request" in rpc.content
    assert rpc.structured["error"]["server_error"]["data"] == {"hint": "none"}
    history = rt.recorder.history(inv.id)  # type: ignore[attr-defined]
    assert [c.status for c in history.calls] == ["failed", "failed"]


def test_ask_goes_through_the_confirmation_callback(home: Path, rt: Runtime) -> None:
    asked: list[str] = []

    def confirm(request: object) -> bool:
        asked.append(request.call_name)  # type: ignore[attr-defined]
        return len(asked) == 1

    inv = rt.invocation(confirm=confirm)
    assert call(inv, "mcp__fx__add", {"a": 2, "b": 3}).content == "5"
    refused = call(inv, "mcp__fx__add", {"a": 2, "b": 3})
    assert refused.error_code == "tool.permission_denied"
    assert asked == ["mcp__fx__add", "mcp__fx__add"]
    assert call(rt.invocation(), "mcp__fx__add", {"a": 1, "b": 1}).error_code == "tool.permission_denied"
    assert call(rt.invocation(confirm=confirm), "mcp__fx__echo", {"message": "x"}).content == "Echo: x"
    assert asked == ["mcp__fx__add", "mcp__fx__add"]  # `allow` tools are not asked about


def test_list_changed_refreshes_the_catalog(rt: Runtime) -> None:
    assert rt.mcp is not None
    inv = rt.invocation()
    assert call(inv, "mcp__fx__add_tool", {"name": "fresh_tool"}).content == "added fresh_tool"
    deadline = time.monotonic() + 10
    while "mcp__fx__fresh_tool" not in rt.invocation().call_names() and time.monotonic() < deadline:
        time.sleep(0.02)
    later = rt.invocation()
    assert call(later, "mcp__fx__fresh_tool").content == "I am fresh_tool"
    assert "mcp__fx__fresh_tool" not in inv.call_names()  # a prepared snapshot never changes


def test_restart_uses_the_cache_without_connecting(home: Path, rt: Runtime) -> None:
    assert rt.mcp is not None
    rid = rt.mcp.status()[0].registration_id
    server_log = home / "mcp" / "logs" / f"{rid}.log"  # one `tooldeck starts:` line per process started

    def starts() -> int:
        return server_log.read_text(encoding="utf-8").count("tooldeck starts:")

    before = starts()
    with Runtime(home) as again:
        assert again.mcp is not None
        [status] = again.mcp.status()
        assert status.registration_id == rid and status.state == "cached"
        inv = again.invocation()
        assert f"mcp/{rid}:echo" in inv.call_names().values()
        assert starts() == before  # no server was spawned to open the runtime or prepare the invocation
        assert call(inv, "mcp__fx__echo", {"message": "lazy"}).content == "Echo: lazy"  # connects now
        assert again.mcp.status()[0].state == "connected"
        assert starts() == before + 1


def test_paused_and_off_at_call_time_are_not_sent(home: Path, rt: Runtime, tmp_path: Path) -> None:
    old = rt.invocation()
    rid = rt.mcp.status()[0].registration_id  # type: ignore[union-attr]
    toml = home / "tooldeck.toml"
    original = toml.read_text()
    try:
        toml.write_text(original + "echo = 'off'\n")
        with Runtime(home) as off_rt:
            assert "mcp__fx__echo" not in off_rt.invocation().call_names()
            result = call(off_rt.invocation(snapshot=old.snapshot), "mcp__fx__echo", {"message": "x"})
            assert result.error_code == "mcp.not_sent" and "No request was sent" in result.content
            assert result.structured["error"]["reason"] == "tool_off"
        toml.write_text(original + "[mcp.servers.fx]\npaused = true\n")
        with Runtime(home) as paused_rt:
            assert paused_rt.mcp is not None and paused_rt.mcp.status()[0].state == "paused"
            assert not [n for n in paused_rt.invocation().call_names() if n.startswith("mcp__")]
            assert any(d.code == "mcp.server_paused" for d in paused_rt.invocation().diagnostics)
            result = call(paused_rt.invocation(snapshot=old.snapshot), "mcp__fx__echo", {"message": "x"})
            assert result.error_code == "mcp.not_sent" and result.structured["error"]["reason"] == "paused"
            assert paused_rt.mcp.resolve(ToolId.mcp(rid, "echo")) is not None
            assert paused_rt.mcp.status()[0].state == "paused"  # nothing was started
    finally:
        toml.write_text(original)


def test_sync_facade_and_host_loop_share_one_mcp_thread(rt: Runtime) -> None:
    import asyncio

    inv = rt.invocation()
    assert call(inv, "mcp__fx__echo", {"message": "sync"}).content == "Echo: sync"

    async def host() -> list[str]:
        # `together` returns once both calls run in the server at the same time (or after 30 s, saying 1).
        args = {"group": "host-loop", "count": 2}
        results = await asyncio.gather(
            rt.invocation().arun([{"id": "h1", "name": "mcp__fx__together", "arguments": args}]),
            rt.invocation().arun([{"id": "h2", "name": "mcp__fx__together", "arguments": args}]),
        )
        return [r[0].content for r in results]

    assert asyncio.run(host()) == ["2 at once", "2 at once"]  # the two invocations' calls were in flight together
    assert call(rt.invocation(), "mcp__fx__echo", {"message": "again"}).content == "Echo: again"


def test_legacy_handshake_and_list_changed_notification(tmp_path: Path) -> None:
    """protocol = "legacy": the initialize handshake (2025-11-25), where list changes arrive as
    `notifications/tools/list_changed` on the session instead of a subscriptions/listen stream."""
    write_mcp_json(tmp_path, {"old": fixture_server(protocol="legacy")})
    with Runtime(tmp_path) as rt:
        assert rt.mcp is not None
        inv = rt.invocation()
        assert call(inv, "mcp__old__add_tool", {"name": "legacy_added"}).content == "added legacy_added"
        deadline = time.monotonic() + 10
        while "mcp__old__legacy_added" not in rt.invocation().call_names() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert call(rt.invocation(), "mcp__old__legacy_added").content == "I am legacy_added"
        catalog = rt.mcp._servers["old"].catalog
        assert catalog is not None and catalog.protocol_version == "2025-11-25"
