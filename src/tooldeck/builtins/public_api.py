"""`public_api_list` (Agenvoy's tool of the same name, a builtin since its v1.3.2): the catalogue of public
web APIs at Agenvoy's Public API List, for finding an API before building a tool on it.

`type` = `category` lists the categories; `category` = a name lists that category's APIs; neither lists
every API. One GET of `https://public-api-list.agenvoy.com/` (the Profile's `public_api_list_url`
replaces it) with those as query parameters, through the SSRF guard, 30 s at most; the JSON answer is
returned as it came (compact), read up to 2 MiB. Read-only, never asks.
"""

from __future__ import annotations

from typing import Any, Final

from tooldeck.builtins.net import http_errors, read_capped, reason
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

DEFAULT_URL: Final = "https://public-api-list.agenvoy.com/"
TIMEOUT_S: Final = 30.0
MAX_ANSWER_BYTES: Final = 2 * 1024 * 1024
FAILED: Final = "public_api.failed"


async def public_api_list(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    import orjson

    from tooldeck.net.clients import client_for
    from tooldeck.net.guard import check_url

    profile = ctx.invocation.profile
    url = check_url(profile.public_api_list_url or DEFAULT_URL)
    params = {k: str(args[k]).strip() for k in ("type", "category") if str(args.get(k) or "").strip()}
    with http_errors(f"the Public API List did not answer within {TIMEOUT_S:g} s; try again later.",
                     lambda exc: f"the Public API List could not be reached: {reason(exc)}."):
        client = client_for(ctx.run, profile.net_allow)
        async with client.stream("GET", url, params=params, timeout=TIMEOUT_S,
                                 headers={"accept": "application/json"}) as response:
            body, truncated = await read_capped(response, MAX_ANSWER_BYTES)
    if not response.is_success:
        detail = body[:300].decode("utf-8", "replace").strip()
        hint = " Call it with type=category to see the category names." if "category" in params else ""
        raise ToolCallError(FAILED, f"the Public API List answered http {response.status_code}"
                            f"{': ' + detail if detail else ''}.{hint}")
    if truncated:
        raise ToolCallError(FAILED, f"the Public API List's answer is larger than {MAX_ANSWER_BYTES // 1048576} MiB; "
                            "narrow it with `category`.")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ToolCallError(FAILED, "the Public API List did not answer with JSON (its first bytes: "
                            f"{body[:80]!r}); try again later.") from None
    return ToolOutput(json_text(data), data if isinstance(data, dict) else {"items": data})


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("public_api_list"),
    title="List public APIs",
    description="Find a public web API to build on: type=category lists the categories; category=NAME lists "
                "that category's APIs (name, description, auth, HTTPS, CORS, link); neither lists all. Prefer "
                "APIs without auth and with HTTPS, then read their docs with fetch_page.",
    input_schema={
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["category"], "description": "`category`: list the categories."},
            "category": {"type": "string", "description": "A category name, e.g. `Animals`."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, idempotent=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, public_api_list)]
