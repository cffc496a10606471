"""Every fixture the conformance kit's server scenarios expect, on the official SDK (`MCPServer`): the tools of
`tools-call-*`, `json-schema-2020-12`, `elicitation-sep1034-defaults`, `elicitation-sep1330-enums` and
`server-sse-polling` (`test_reconnection`), the resources, templates and subscriptions of `resources-*`, the
prompts of `prompts-*`, completion and logging. The kit's own scenario sources
(`.node-conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js`) say what each must return.

`python conformance_content_server.py [--http PORT]`: stdio, or streamable HTTP on 127.0.0.1:PORT.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import struct
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tooldeck.server.event_store import MemoryEventStore

PNG_1x1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
PNG_B64 = base64.b64encode(PNG_1x1).decode()
# A WAV file of 8 silent 8-bit mono samples at 8 kHz.
WAV = (b"RIFF" + struct.pack("<I", 36 + 8) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 8000, 8000, 1, 8)
       + b"data" + struct.pack("<I", 8) + b"\x80" * 8)
WAV_B64 = base64.b64encode(WAV).decode()
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
SEP1034_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "score": {"type": "number", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "default": True},
}}
SEP1330_SCHEMA = {"type": "object", "properties": {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                 {"const": "value2", "title": "Second Option"},
                                                 {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                   "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                         {"const": "value2", "title": "Second Choice"},
                                                         {"const": "value3", "title": "Third Choice"}]}},
}}


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


async def _ask(ctx: Context, request: Any, result_type: type[Any]) -> Any:
    """Ask the client during the call: a request on the handshake protocol; on 2026-07-28, where a server sends no
    requests mid-call, an `InputRequiredResult` round (the client answers and retries the call)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return await ctx.session.send_request(request, result_type,
                                              metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
    answer = (ctx.input_responses or {}).get("ask")
    if isinstance(answer, result_type):
        return answer
    return types.InputRequiredResult(input_requests={"ask": request}, request_state="ask")


def add_tools(server: MCPServer) -> None:
    """The tools of the `tools-call-*`, `json-schema-2020-12`, `elicitation-*` and `server-sse-polling` scenarios."""

    @server.tool(name="test_simple_text", description="Returns simple text.")
    def simple_text() -> list[Any]:
        return [text("This is a simple text response for testing.")]

    @server.tool(name="test_image_content", description="Returns a PNG image.")
    def image_content() -> list[Any]:
        return [types.ImageContent(type="image", data=PNG_B64, mime_type="image/png")]

    @server.tool(name="test_audio_content", description="Returns a WAV sound.")
    def audio_content() -> list[Any]:
        return [types.AudioContent(type="audio", data=WAV_B64, mime_type="audio/wav")]

    @server.tool(name="test_embedded_resource", description="Returns an embedded text resource.")
    def embedded_resource() -> list[Any]:
        resource = types.TextResourceContents(uri="test://embedded-resource", mime_type="text/plain",
                                              text="This is an embedded resource content.")
        return [types.EmbeddedResource(type="resource", resource=resource)]

    @server.tool(name="test_multiple_content_types", description="Returns text, an image and a resource.")
    def multiple_content_types() -> list[Any]:
        resource = types.TextResourceContents(uri="test://mixed-content-resource", mime_type="application/json",
                                              text=json.dumps({"test": "data", "value": 123}))
        return [text("Multiple content types test:"),
                types.ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
                types.EmbeddedResource(type="resource", resource=resource)]

    @server.tool(name="test_tool_with_logging", description="Sends three info log messages while it runs.")
    async def with_logging(ctx: Context) -> str:
        for i, line in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
            if i:
                await asyncio.sleep(0.05)
            await ctx.session.send_log_message("info", line, logger="conformance", related_request_id=ctx.request_id)
        return "Tool with logging executed successfully"

    @server.tool(name="test_tool_with_progress", description="Reports progress 0, 50, 100 of 100.")
    async def with_progress(ctx: Context) -> str:
        for i, done in enumerate((0, 50, 100)):
            if i:
                await asyncio.sleep(0.05)
            await ctx.report_progress(done, 100, f"{done}% done")
        return "Tool with progress executed successfully"

    @server.tool(name="test_error_handling", description="Always fails.")
    def error_handling() -> str:
        raise RuntimeError("This tool intentionally returns an error for testing")

    @server.tool(name="test_sampling", description="Asks the client's model (sampling/createMessage).")
    async def sampling(prompt: str, ctx: Context) -> str | types.InputRequiredResult:
        message = types.SamplingMessage(role="user", content=text(prompt))
        ask = types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=100))
        answer = await _ask(ctx, ask, types.CreateMessageResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        said = answer.content.text if isinstance(answer.content, types.TextContent) else str(answer.content)
        return f"LLM response: {said}"

    async def elicit(ctx: Context, message: str, schema: dict[str, Any], done: str) -> str | types.InputRequiredResult:
        ask = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
        answer = await _ask(ctx, ask, types.ElicitResult)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        return f"{done}: action={answer.action}, content={json.dumps(answer.content)}"

    @server.tool(name="test_elicitation", description="Asks the client's user (elicitation/create).")
    async def elicitation(message: str, ctx: Context) -> str | types.InputRequiredResult:
        schema = {"type": "object", "required": ["username", "email"], "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}}}
        return await elicit(ctx, message, schema, "User response")

    @server.tool(name="test_elicitation_sep1034_defaults", description="Elicitation with defaults (SEP-1034).")
    async def sep1034(ctx: Context) -> str | types.InputRequiredResult:
        return await elicit(ctx, "Please review and update the form fields with defaults", SEP1034_SCHEMA,
                            "Elicitation completed")

    @server.tool(name="test_elicitation_sep1330_enums", description="Elicitation with enum schemas (SEP-1330).")
    async def sep1330(ctx: Context) -> str | types.InputRequiredResult:
        return await elicit(ctx, "Please select options from the enum fields", SEP1330_SCHEMA, "Elicitation completed")

    @server.tool(name="test_reconnection", description="Closes the SSE stream mid-call, then answers (SEP-1699).")
    async def reconnection(ctx: Context) -> str:
        await ctx.close_sse_stream()
        await asyncio.sleep(0.1)
        return "Reconnection test completed"

    @server.tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features")
    def schema_2020_12(name: str = "", address: dict[str, Any] | None = None) -> str:
        return f"name={name}, address={json.dumps(address)}"

    server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = SCHEMA_2020_12  # type: ignore[union-attr]


def build() -> MCPServer:
    server = MCPServer("conformance-content")
    add_tools(server)

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

    async def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    port = parser.parse_args().http
    if port:
        # An event store makes `test_reconnection`'s stream close resumable (SEP-1699).
        build().run("streamable-http", host="127.0.0.1", port=port, event_store=MemoryEventStore(), retry_interval=500)
    else:
        build().run("stdio")


if __name__ == "__main__":
    main()
