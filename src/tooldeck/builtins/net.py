"""`http_request` (Agenvoy's tool of the same name): one HTTP request through the SSRF guard.

Parameters, defaults and limits follow Agenvoy (docs/configuration.md, "Optional builtins"): methods
GET POST PUT DELETE PATCH, `headers`, a `body` sent as JSON, a form or multipart (files from the
workspace), `timeout` clamped to 1–300 s (≤ 0 means 60), the response body read up to 2 MiB. A
non-2xx status is an answer, not an error. Anything but GET asks for confirmation unless the
Profile sets the tool's permission itself.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:  # httpx and the guard load on the first request, not with the catalog (start-up time)
    import httpx

METHODS: Final = ("GET", "POST", "PUT", "DELETE", "PATCH")
MAX_BODY_BYTES: Final = 2 * 1024 * 1024
MAX_UPLOAD_BYTES: Final = 10 * 1024 * 1024
DEFAULT_TIMEOUT_S: Final = 60.0
MAX_TIMEOUT_S: Final = 300.0
INVALID_BODY: Final = "http.invalid_body"
REQUEST_FAILED: Final = "http.request_failed"
TIMED_OUT: Final = "http.timeout"

_SCALARS = (str, int, float, bool)


def clamp_timeout(value: float | None, default: float = DEFAULT_TIMEOUT_S, most: float = MAX_TIMEOUT_S) -> float:
    """Agenvoy's rule: ≤ 0 (or none) means the default; more than the most is the most, not an error."""
    if value is None or value <= 0:
        return default
    return min(float(value), most)


async def read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """At most `cap` bytes of the body, and whether there was more (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    truncated = False
    stream = response.aiter_bytes()
    try:
        async for chunk in stream:
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                truncated = True
                break
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return b"".join(chunks)[:cap], truncated


def reason(exc: BaseException) -> str:
    """What an HTTP error says, or its class name when it says nothing (httpx's `ReadTimeout('')`)."""
    return str(exc) or type(exc).__name__


@contextlib.contextmanager
def http_errors(timed_out: str, failed: Callable[[Exception], str]) -> Iterator[None]:
    """httpx's errors inside the block as the tool errors every network tool answers, by one table (as
    httpx maps httpcore's): no answer in time is `http.timeout` with the message `timed_out`, any other
    transport or protocol error `http.request_failed` with `failed(exc)`. Anything else passes through."""
    import httpx

    table: tuple[tuple[type[Exception], str, Callable[[Exception], str]], ...] = (
        (httpx.TimeoutException, TIMED_OUT, lambda _exc: timed_out),
        (httpx.HTTPError, REQUEST_FAILED, failed),
    )
    try:
        yield
    except httpx.HTTPError as exc:
        code, message = next((code, message) for kind, code, message in table if isinstance(exc, kind))
        raise ToolCallError(code, message(exc)) from None


def _form(body: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in body.items():
        if value is None or not isinstance(value, _SCALARS):
            raise ToolCallError(INVALID_BODY, f"form field `{key}` must be a string, number or boolean; a form body "
                                "is a flat object. Send nested data with content_type \"json\".")
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _multipart(body: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    unknown = set(body) - {"fields", "files"}
    if unknown:
        raise ToolCallError(INVALID_BODY, f"a multipart body has `fields` and `files` only, not {sorted(unknown)}.")
    fields = body.get("fields") or {}
    files = body.get("files") or []
    if not isinstance(fields, dict) or not isinstance(files, list):
        raise ToolCallError(INVALID_BODY, "multipart `fields` must be an object and `files` a list of "
                            "{name, path, content_type}.")
    store, policy = workspace(ctx)
    parts: list[tuple[str, tuple[str, bytes, str]]] = []
    total = 0
    for i, item in enumerate(files):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("path"), str):
            raise ToolCallError(INVALID_BODY, f"multipart file #{i + 1} must be an object with `name` (the form "
                                "field) and `path` (a workspace file).")
        data = store.read_if_exists(store.locate(policy, item["path"]))
        if data is None:
            raise ToolCallError(INVALID_BODY, f"multipart file #{i + 1}: `{item['path']}` does not exist in the "
                                "workspace.")
        total += len(data)
        if total > MAX_UPLOAD_BYTES:
            raise ToolCallError(INVALID_BODY, f"the files to upload exceed {MAX_UPLOAD_BYTES // 1048576} MiB.")
        filename = item["path"].rsplit("/", 1)[-1]
        parts.append((item["name"], (filename, data, str(item.get("content_type") or "application/octet-stream"))))
    return {"data": _form(fields), "files": parts}


def _request_body(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    body = args.get("body")
    kind = args.get("content_type") or "json"
    if body is None:
        return {}
    if kind == "json":
        return {"content": json_text(body).encode(), "headers": {"content-type": "application/json"}}
    if not isinstance(body, dict):
        raise ToolCallError(INVALID_BODY, f"a {kind} body must be an object.")
    if kind == "form":
        return {"data": _form(body)}
    return _multipart(body, ctx)


def _shown_body(response: httpx.Response, data: bytes, truncated: bool) -> str:
    content_type = response.headers.get("content-type", "")
    textual = (not content_type or content_type.startswith("text/") or "json" in content_type
               or "xml" in content_type or "javascript" in content_type or "x-www-form-urlencoded" in content_type)
    if textual:
        try:
            text = data.decode(response.charset_encoding or "utf-8")
        except (LookupError, UnicodeDecodeError):
            text = None
        if text is not None:
            return text + ("\n[body truncated at 2 MiB]" if truncated else "")
    note = " (truncated at 2 MiB)" if truncated else ""
    return f"base64:{base64.b64encode(data).decode()}{note}" if len(data) <= 64 * 1024 else (
        f"[binary body: {len(data):,} bytes{note}, content-type {content_type or 'unknown'}; not shown]")


async def send(args: Mapping[str, Any], ctx: CallContext) -> dict[str, Any]:
    from tooldeck.net.clients import client_for
    from tooldeck.net.guard import check_url

    url = check_url(args["url"])
    method = args.get("method") or "GET"
    timeout = clamp_timeout(args.get("timeout"))
    extra = _request_body(args, ctx)
    headers = {**(args.get("headers") or {}), **extra.pop("headers", {})}
    with http_errors(f"{method} {url} did not answer within {timeout:g} s; retry with a larger `timeout` (at most "
                     "300) or later.", lambda exc: f"{method} {url} failed: {reason(exc)}."):
        client = client_for(ctx.run, ctx.invocation.profile.net_allow)
        async with client.stream(method, url, headers=headers, timeout=timeout, **extra) as response:
            data, truncated = await read_capped(response, MAX_BODY_BYTES)
    first: dict[str, str] = {}
    for key, value in response.headers.multi_items():
        first.setdefault(key, value)
    return {"status_code": response.status_code, "headers": first,
            "body": _shown_body(response, data, truncated)}


async def handle(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    answer = await send(args, ctx)
    return ToolOutput(json_text(answer), answer)


def needs_confirmation(args: Mapping[str, Any]) -> bool:
    return (args.get("method") or "GET") != "GET"


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("http_request"),
    title="HTTP request",
    description="Send one HTTP request to a public http(s) URL and return {status_code, headers, body}. A non-2xx "
                "status is returned, not an error. Private, loopback and metadata addresses are refused. The body "
                "is read up to 2 MiB. Methods other than GET may need the user's confirmation.",
    input_schema={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "Absolute http:// or https:// URL."},
            "method": {"type": "string", "enum": list(METHODS), "description": "Default GET."},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "body": {"description": "json: any JSON value; form: a flat object; multipart: {fields: {...}, "
                                    "files: [{name, path (workspace file), content_type}]}."},
            "content_type": {"type": "string", "enum": ["json", "form", "multipart"], "description": "How to send "
                             "`body`; default json."},
            "timeout": {"type": "number", "description": "Seconds, default 60, at most 300."},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(concurrency_safe=True),
    confirm_when=needs_confirmation,
)

TOOLS = [BuiltinTool(DESCRIPTOR, handle)]
