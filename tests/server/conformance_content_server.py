"""The resources, templates, prompts and completion that the conformance kit's server scenarios
(`resources-*`, `prompts-*`, `completion-complete`) expect, on the official SDK (`MCPServer`).

`python conformance_content_server.py [--http PORT]`: stdio, or streamable HTTP on 127.0.0.1:PORT.
"""

from __future__ import annotations

import argparse
import base64
import json
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG_1x1).decode()


def build() -> MCPServer:
    server = MCPServer("conformance-content")

    @server.resource("test://static-text", name="static-text", description="A static text.", mime_type="text/plain")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", name="static-binary", description="A PNG.", mime_type="image/png")
    def static_binary() -> bytes:
        return PNG_1x1

    @server.resource("test://watched-resource", name="watched", description="Changes.", mime_type="text/plain")
    def watched() -> str:
        return "watched"

    @server.resource("test://template/{id}/data", name="template", description="Data by id.",
                     mime_type="application/json")
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.prompt(name="test_simple_prompt", description="A simple prompt.")
    def simple() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(name="test_prompt_with_arguments", description="A prompt with arguments.")
    def with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(name="test_prompt_with_embedded_resource", description="A prompt with a resource.")
    def with_resource(resourceUri: str) -> list[Any]:
        resource = types.TextResourceContents(uri=resourceUri, mime_type="text/plain",
                                              text="Embedded resource content for testing.")
        return [UserMessage(content=types.EmbeddedResource(type="resource", resource=resource)),
                UserMessage(content="Please process the embedded resource above.")]

    @server.prompt(name="test_prompt_with_image", description="A prompt with an image.")
    def with_image() -> list[Any]:
        return [UserMessage(content=types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")),
                UserMessage(content="Please analyze the image above.")]

    @server.completion()
    async def complete(ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
        values = [v for v in ("paris", "park", "party", "test-value") if v.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)

    async def subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    server._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, subscribe)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    port = parser.parse_args().http
    if port:
        build().run("streamable-http", host="127.0.0.1", port=port)
    else:
        build().run("stdio")


if __name__ == "__main__":
    main()
