"""Resources, resource templates, prompts and completion of upstream MCP servers through `tooldeck serve`
(issue 12 item 3). Two real fixture servers (`content_server.py`, official SDK) whose URIs, templates and prompt
names clash; a real official client downstream of a real `tooldeck serve` process (stdio and streamable HTTP);
every answer compared with the same request sent to the upstream server directly."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.server.support import http_server, stdio_params

FIXTURE = Path(__file__).resolve().with_name("content_server.py")
SERVERS = ("fa", "fb")


def _home(tmp_path: Path, profile: str = "", toml: str = "") -> Path:
    home = tmp_path / "home"
    home.mkdir()
    servers = {n: {"command": sys.executable, "args": [str(FIXTURE), "--name", n]} for n in SERVERS}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    if profile:
        (home / "profile.toml").write_text(profile)
    if toml:
        (home / "tooldeck.toml").write_text(toml)
    return home


@contextmanager
def _target(home: Path, transport: str, *args: str) -> Iterator[Any]:
    if transport == "stdio":
        yield stdio_client(stdio_params(home, *args))
    else:
        with http_server(home, *args) as served:
            yield served.url


@asynccontextmanager
async def _gateway(home: Path, transport: str = "stdio", *args: str) -> AsyncIterator[Client]:
    with _target(home, transport, *args) as target:
        async with Client(target, mode="legacy", read_timeout_seconds=30) as client:
            yield client


@asynccontextmanager
async def _direct(name: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable, args=[str(FIXTURE), "--name", name])
    async with Client(stdio_client(params), mode="legacy", read_timeout_seconds=30) as client:
        yield client


def _texts(result: types.ReadResourceResult) -> list[tuple[str | None, str]]:
    return [(c.mime_type, c.text if isinstance(c, types.TextResourceContents) else c.blob) for c in result.contents]


def _events(home: Path, kind: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(home / "records.sqlite")
    try:
        return [json.loads(row[0]) for row in db.execute("SELECT data FROM events WHERE kind = ? ORDER BY seq",
                                                          (kind,))]
    finally:
        db.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_resources_through_the_gateway_equal_direct(tmp_path: Path, transport: str) -> None:
    home = _home(tmp_path)
    async with _direct("fa") as fa, _direct("fb") as fb, _gateway(home, transport) as gw:
        direct = {"fa": fa, "fb": fb}
        listed = {r.uri: r for r in (await gw.list_resources()).resources}
        # fa comes first by name: its URIs pass unchanged; fb's clashing ones are rewritten, its own pass
        assert set(listed) == {"note://shared", "note://fa/own", "bin://pixel", "tooldeck+mcp://fb/note://shared",
                               "note://fb/own", "tooldeck+mcp://fb/bin://pixel"}
        routes = {"note://shared": ("fa", "note://shared"), "note://fa/own": ("fa", "note://fa/own"),
                  "bin://pixel": ("fa", "bin://pixel"), "tooldeck+mcp://fb/note://shared": ("fb", "note://shared"),
                  "note://fb/own": ("fb", "note://fb/own"), "tooldeck+mcp://fb/bin://pixel": ("fb", "bin://pixel")}
        for uri, (server, original) in routes.items():
            upstream = {r.uri: r for r in (await direct[server].list_resources()).resources}[original]
            assert listed[uri].model_copy(update={"uri": original}) == upstream
            through = await gw.read_resource(uri)
            assert _texts(through) == _texts(await direct[server].read_resource(original))
            assert [c.uri for c in through.contents] == [uri]  # named as the client asked for it
        assert (await gw.read_resource("note://shared")).contents[0].text == "shared note of fa"  # type: ignore[union-attr]
        assert (await gw.read_resource("tooldeck+mcp://fb/note://shared")).contents[0].text == "shared note of fb"  # type: ignore[union-attr]

        templates = {t.uri_template for t in (await gw.list_resource_templates()).resource_templates}
        assert templates == {"note://{id}", "fa://items/{item}", "tooldeck+mcp://fb/note://{id}", "fb://items/{item}"}
        # a template's expansion reaches the server whose template it is, with the URI it would have got directly
        for uri, server, original in [("note://7", "fa", "note://7"), ("tooldeck+mcp://fb/note://7", "fb", "note://7"),
                                      ("fb://items/x%20y", "fb", "fb://items/x%20y")]:
            assert _texts(await gw.read_resource(uri)) == _texts(await direct[server].read_resource(original))


@pytest.mark.parametrize("names", ["prefixed", "original"])
async def test_prompts_namespaced_and_arguments_passed(tmp_path: Path, names: str) -> None:
    home = _home(tmp_path)
    async with _direct("fb") as fb, _gateway(home, "stdio", "--names", names) as gw:
        prompts = {p.name: p for p in (await gw.list_prompts()).prompts}
        if names == "prefixed":
            assert set(prompts) == {"mcp__fa__greet", "mcp__fa__fa_only", "mcp__fb__greet", "mcp__fb__fb_only"}
        else:  # unique names kept, every side of a clash prefixed
            assert set(prompts) == {"mcp__fa__greet", "fa_only", "mcp__fb__greet", "fb_only"}
        upstream = {p.name: p for p in (await fb.list_prompts()).prompts}
        assert prompts["mcp__fb__greet"].model_copy(update={"name": "greet"}) == upstream["greet"]
        args = {"who": "ann", "colour": "blue"}
        through = await gw.get_prompt("mcp__fb__greet", args)
        assert through.messages == (await fb.get_prompt("greet", args)).messages
        assert through.messages[0].content.text == "fb greets ann in blue"  # type: ignore[union-attr]
        with pytest.raises(MCPError) as info:
            await gw.get_prompt("greet", args)
        assert info.value.data == {"code": "serve.prompt_unknown"}
        assert "mcp__fa__greet" in info.value.message


async def test_completion_forwarded_to_the_owning_server(tmp_path: Path) -> None:
    home = _home(tmp_path)
    async with _direct("fb") as fb, _gateway(home, "http") as gw:
        await gw.list_prompts()
        ref = types.PromptReference(type="ref/prompt", name="mcp__fb__greet")
        through = await gw.complete(ref, {"name": "colour", "value": "b"})
        direct = await fb.complete(types.PromptReference(type="ref/prompt", name="greet"),
                                   {"name": "colour", "value": "b"})
        assert through.completion == direct.completion
        assert through.completion.values == ["blue", "black"]
        tref = types.ResourceTemplateReference(type="ref/resource", uri="tooldeck+mcp://fb/note://{id}")
        assert (await gw.complete(tref, {"name": "id", "value": "q"})).completion.values == ["fb-q1", "fb-q2"]
        tref = types.ResourceTemplateReference(type="ref/resource", uri="note://{id}")
        assert (await gw.complete(tref, {"name": "id", "value": "q"})).completion.values == ["fa-q1", "fa-q2"]


@pytest.mark.parametrize("rule", ['deny = ["mcp/fb-*:*"]', '[permissions]\n"mcp/fb-*:resource:*" = "ask"'])
async def test_profile_hides_and_refuses_a_servers_resources(tmp_path: Path, rule: str) -> None:
    home = _home(tmp_path, profile=rule + "\n")
    async with _gateway(home) as gw:
        uris = {r.uri for r in (await gw.list_resources()).resources}
        assert uris == {"note://shared", "note://fa/own", "bin://pixel"}  # fb's gone, so nothing clashes
        templates = {t.uri_template for t in (await gw.list_resource_templates()).resource_templates}
        assert templates == {"note://{id}", "fa://items/{item}"}
        with pytest.raises(MCPError) as info:
            await gw.read_resource("note://fb/own")
        assert info.value.data == {"code": "serve.resource_denied"}
        assert "mcp/fb-" in info.value.message and ":resource:note://fb/own" in info.value.message
        with pytest.raises(MCPError) as info:
            await gw.read_resource("tooldeck+mcp://fb/note://shared")
        assert info.value.data["code"] in ("serve.resource_denied", "serve.resource_unknown")
        prompts = {p.name for p in (await gw.list_prompts()).prompts}
        if rule.startswith("deny"):
            assert prompts == {"mcp__fa__greet", "mcp__fa__fa_only"}
        else:  # only resources were set to ask
            assert "mcp__fb__greet" in prompts
    assert not [e for e in _events(home, "mcp_resource_read") if e["server"] == "fb"]  # nothing was sent


async def test_reads_and_prompts_are_recorded_without_contents(tmp_path: Path) -> None:
    home = _home(tmp_path)
    async with _gateway(home, "http") as gw:
        await gw.read_resource("tooldeck+mcp://fb/note://shared")
        await gw.get_prompt("mcp__fa__greet", {"who": "secret-value-123"})
        with pytest.raises(MCPError) as info:
            await gw.read_resource("nope://nothing")
        assert info.value.code == -32002 and info.value.data["code"] == "serve.resource_unknown"
    [read] = _events(home, "mcp_resource_read")
    assert read == {"server": "fb", "uri": "tooldeck+mcp://fb/note://shared", "upstream_uri": "note://shared",
                    "outcome": "ok", "contents": 1, "chars": len("shared note of fb")}
    [got] = _events(home, "mcp_prompt_get")
    assert got["server"] == "fa" and got["upstream_prompt"] == "greet" and got["arguments"] == ["who"]
    db = sqlite3.connect(home / "records.sqlite")
    try:
        dump = "\n".join(str(row) for row in db.execute("SELECT data FROM events"))
    finally:
        db.close()
    assert "secret-value-123" not in dump and "shared note of fb" not in dump


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")  # the handshake-era client API
@pytest.mark.parametrize("upstream", ["auto", "legacy"])
async def test_subscriptions_relay_updates_per_session(tmp_path: Path, upstream: str) -> None:
    home = _home(tmp_path)
    config = json.loads((home / "mcp.json").read_text())
    config["mcpServers"]["fb"]["protocol"] = upstream  # legacy: resources/subscribe upstream; auto: listen
    (home / "mcp.json").write_text(json.dumps(config))
    seen: dict[str, list[str]] = {"one": [], "two": []}

    def handler(who: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, types.ResourceUpdatedNotification):
                seen[who].append(message.params.uri)
        return on_message

    async def wait_for(who: str, uri: str) -> None:
        with anyio.fail_after(30):
            while uri not in seen[who]:
                await anyio.sleep(0.05)

    with http_server(home) as served:
        async with Client(served.url, mode="legacy", read_timeout_seconds=30, message_handler=handler("one")) as one, \
                Client(served.url, mode="legacy", read_timeout_seconds=30, message_handler=handler("two")) as two:
            shared, own = "tooldeck+mcp://fb/note://shared", "note://fb/own"
            await one.subscribe_resource(shared)
            await two.subscribe_resource(shared)
            await two.subscribe_resource(own)
            await one.call_tool("mcp__fb__touch", {"uri": "note://shared"})
            await wait_for("one", shared)
            await wait_for("two", shared)
            await two.unsubscribe_resource(shared)
            await one.call_tool("mcp__fb__touch", {"uri": "note://shared"})
            await one.call_tool("mcp__fb__touch", {"uri": "note://fb/own"})
            await wait_for("two", own)
            with anyio.fail_after(30):
                while seen["one"].count(shared) < 2:
                    await anyio.sleep(0.05)
            assert seen["two"] == [shared, own]  # unsubscribed from shared: only own's update came after
            assert own not in seen["one"]  # per session: one never subscribed to own
            with pytest.raises(MCPError) as info:
                await one.subscribe_resource("nope://nothing")
            assert info.value.data["code"] == "serve.resource_unknown"


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")  # the handshake-era client API
@pytest.mark.parametrize("upstream", ["auto", "legacy"])
async def test_a_session_that_ends_takes_its_subscriptions_along(tmp_path: Path, upstream: str) -> None:
    """The last subscriber of a URI ended its session without unsubscribing: the upstream subscription stayed, and
    the next session to subscribe was told of each update twice (a second callback on the same subscription)."""
    home = _home(tmp_path)
    config = json.loads((home / "mcp.json").read_text())
    config["mcpServers"]["fb"]["protocol"] = upstream
    (home / "mcp.json").write_text(json.dumps(config))
    shared = "tooldeck+mcp://fb/note://shared"
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(message.params.uri)

    with http_server(home) as served:
        async with Client(served.url, mode="legacy", read_timeout_seconds=30) as one:
            await one.subscribe_resource(shared)
        # `one` ended its session (DELETE) without unsubscribing
        async with Client(served.url, mode="legacy", read_timeout_seconds=30, message_handler=on_message) as two:
            await two.subscribe_resource(shared)
            await two.call_tool("mcp__fb__touch", {"uri": "note://shared"})
            with anyio.fail_after(30):
                while not seen:
                    await anyio.sleep(0.05)
            await two.call_tool("mcp__fb__touch", {"uri": "note://shared"})
            with anyio.fail_after(30):
                while len(seen) < 2:
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)  # a doubled notification would have come by now
    assert seen == [shared, shared]  # one per update
