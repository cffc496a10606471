"""An MCP server (official SDK, `MCPServer`, stdio) that offers resources, resource templates, prompts with
arguments and completion, for the tests of what `tooldeck serve` relays besides tools.

`python content_server.py --name NAME`: every server serves the same shared URIs and prompt names
(`note://shared`, `note://{id}`, `greet`), so two of them clash, plus one of each that carries its name
(`note://NAME/own`, `NAME://items/{item}`, `NAME_only`). Texts name the server, so a test sees which one answered.
`resources/subscribe` (handshake era) and `subscriptions/listen` (2026-07-28) both work; the tool
`touch(uri)` announces that a resource changed.
"""

from __future__ import annotations

import argparse
import base64
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
COLOURS = ["red", "green", "blue", "black"]


def build(name: str) -> MCPServer:
    server = MCPServer(name)

    @server.resource("note://shared", name="shared", mime_type="text/plain")
    def shared() -> str:
        return f"shared note of {name}"

    @server.resource(f"note://{name}/own", name="own", mime_type="text/plain")
    def own() -> str:
        return f"own note of {name}"

    @server.resource("bin://pixel", name="pixel", mime_type="image/png")
    def pixel() -> bytes:
        return PNG_1x1

    @server.resource("note://{id}", name="note", mime_type="text/plain")
    def note(id: str) -> str:
        return f"note {id} of {name}"

    @server.resource(f"{name}://items/{{item}}", name="item", mime_type="text/plain")
    def item(item: str) -> str:
        return f"item {item} of {name}"

    @server.prompt(name="greet", description="Greets someone.")
    def greet(who: str, colour: str = "red") -> str:
        return f"{name} greets {who} in {colour}"

    @server.prompt(name=f"{name}_only")
    def only() -> str:
        return f"only {name}"

    @server.completion()
    async def complete(ref: types.PromptReference | types.ResourceTemplateReference, argument: types.CompletionArgument,
                       context: types.CompletionContext | None) -> types.Completion | None:
        if isinstance(ref, types.PromptReference) and argument.name == "colour":
            return types.Completion(values=[c for c in COLOURS if c.startswith(argument.value)])
        if isinstance(ref, types.ResourceTemplateReference) and argument.name in ("id", "item"):
            return types.Completion(values=[f"{name}-{argument.value}{n}" for n in (1, 2)])
        return None

    subscribed: dict[str, list[Any]] = {}  # handshake era: uri -> the sessions that subscribed

    async def subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscribed.setdefault(params.uri, []).append(ctx.session)
        return types.EmptyResult()

    async def unsubscribe(ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.pop(params.uri, None)
        return types.EmptyResult()

    server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        """Tell the subscribers of `uri` that it changed (both protocol eras)."""
        await ctx.notify_resource_updated(uri)
        for session in subscribed.get(uri, []):
            await session.send_resource_updated(uri)
        return f"touched {uri}: {len(subscribed.get(uri, []))} handshake-era subscriber(s)"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="content")
    build(parser.parse_args().name).run("stdio")


if __name__ == "__main__":
    main()
