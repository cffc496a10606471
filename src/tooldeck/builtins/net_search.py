"""`search_web` (Agenvoy's tool of the same name): web and news hits from keyless backends
(`net/search.py`), both at once for `source` all, through the SSRF guard.

`query` (aliases `keyword`, `q`), `source` all | web | news (default all), `time_range` 1h | 6h | 24h |
7d | 30d | 1y (default 7d; news at most 7d), `ceid` (the news locale, default `US:en`), `force` →
`{web, news, web_error?, news_error?}`. Answers are kept 30 minutes per run; `force` asks again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from tooldeck.builtins.net import REQUEST_FAILED, read_capped
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

RANGES: Final = ("1h", "6h", "24h", "7d", "30d", "1y")
NEWS_RANGES: Final = RANGES[:4]
CACHE_S: Final = 30 * 60.0
REQUEST_TIMEOUT_S: Final = 30.0
MAX_ANSWER_BYTES: Final = 2 * 1024 * 1024
QUERY_REQUIRED: Final = "search.query_required"
SEARCH_FAILED: Final = "search.failed"
_CACHE_KEY: Final = "search_web.cache"


async def _one(client: Any, backend: Any, query: str, time_range: str, ceid: str) -> list[dict[str, str]]:
    import httpx

    try:
        request = backend.request(query, time_range, ceid)
        request.extensions["timeout"] = httpx.Timeout(REQUEST_TIMEOUT_S).as_dict()
        response = await client.send(request, stream=True)
        try:
            body, _ = await read_capped(response, MAX_ANSWER_BYTES)
        finally:
            await response.aclose()
    except httpx.HTTPError as exc:
        raise ToolCallError(REQUEST_FAILED, f"{exc or type(exc).__name__}") from None
    if not response.is_success:
        raise ToolCallError(REQUEST_FAILED, f"http {response.status_code}")
    try:
        return [hit.to_dict() for hit in await asyncio.to_thread(backend.parse, body)]
    except ValueError as exc:
        raise ToolCallError(REQUEST_FAILED, str(exc)) from None


async def search(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.net.clients import client_for
    from tooldeck.net.search import DuckDuckGoHtml, GoogleNewsRss

    query = next((str(args[k]).strip() for k in ("query", "keyword", "q") if str(args.get(k) or "").strip()), "")
    if not query:
        raise ToolCallError(QUERY_REQUIRED, "query is required: give the words to search for in `query`.")
    source = args.get("source") or "all"
    time_range = args.get("time_range") or "7d"
    ceid = args.get("ceid") or "US:en"
    key = json_text({"q": query, "s": source, "t": time_range, "c": ceid})
    cache: dict[str, tuple[float, dict[str, Any]]] = ctx.run.state.setdefault(_CACHE_KEY, {})
    cached = cache.get(key)
    if cached is not None and not args.get("force") and time.monotonic() - cached[0] < CACHE_S:
        return ToolOutput(json_text(cached[1]), cached[1])
    profile = ctx.invocation.profile
    jobs: dict[str, tuple[Any, str]] = {}
    if source in ("all", "web"):
        jobs["web"] = (DuckDuckGoHtml(profile.search_web_url or DuckDuckGoHtml().url), time_range)
    if source in ("all", "news"):
        news_range = time_range if time_range in NEWS_RANGES else "7d"
        jobs["news"] = (GoogleNewsRss(profile.search_news_url or GoogleNewsRss().url), news_range)
    client = client_for(ctx.run, profile.net_allow)
    outcomes = await asyncio.gather(*(_one(client, backend, query, rng, ceid) for backend, rng in jobs.values()),
                                    return_exceptions=True)
    answer: dict[str, Any] = {}
    errors: list[str] = []
    for name, outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, ToolCallError):
            answer[name] = []
            answer[f"{name}_error"] = outcome.message
            errors.append(f"{name}: {outcome.message}")
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            answer[name] = outcome
    if len(errors) == len(jobs):
        raise ToolCallError(SEARCH_FAILED, f"the search failed ({'; '.join(errors)}); try again later or use "
                            "fetch_page on a known site.")
    cache[key] = (time.monotonic(), answer)
    return ToolOutput(json_text(answer), answer)


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("search_web"),
    title="Search the web",
    description="Search the web and the news; returns {web: [{title, url, snippet}], news: [{title, url, "
                "published, source}]}. Answers are reused for 30 minutes unless `force` is true.",
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "keyword": {"type": "string", "description": "Same as `query`."},
            "q": {"type": "string", "description": "Same as `query`."},
            "source": {"type": "string", "enum": ["all", "web", "news"], "description": "Default all."},
            "time_range": {"type": "string", "enum": list(RANGES), "description": "Default 7d; news at most 7d."},
            "ceid": {"type": "string", "description": "News locale as COUNTRY:language, default US:en."},
            "force": {"type": "boolean", "description": "Search again instead of reusing a recent answer."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, search)]
