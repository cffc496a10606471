"""`fetch_page` (Agenvoy's tool of the same name): a web page as markdown, through the SSRF guard.

`link` (≤ 2,048 characters, http(s), no credentials, the fragment dropped), `type` markdown (default:
the page converted by `markdownify`, links kept only with `keep_links`) | html (the page as sent) |
json (`{url, title, content}`), `save` / `save_to` (write the content to a new workspace file instead
of answering with it), `force` (ignore the skip-cache). The content is cut at 100 KiB. A URL that
failed is skipped for a while (`net/skip_cache.py`: a 4xx or a page that says it is missing for good,
a 5xx for 12 hours, an empty page for 72 hours). Unlike Agenvoy, http is not upgraded to https (a
server without TLS stays reachable; the guard applies to both) and no browser or cookies are used.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.net import http_errors, read_capped, reason
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import workspace, write_new_file
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

if TYPE_CHECKING:
    import httpx

    from tooldeck.net import skip_cache

MAX_LINK_CHARS: Final = 2048
MAX_CONTENT_CHARS: Final = 100 * 1024
MAX_PAGE_BYTES: Final = 8 * 1024 * 1024
FETCH_TIMEOUT_S: Final = 90.0
TRUNCATED_NOTE: Final = "\n\n[Content truncated due to length...]"
BLOCKED: Final = "fetch.blocked"
FAILED: Final = "fetch.failed"
EMPTY: Final = "fetch.empty"
UNSUPPORTED: Final = "fetch.unsupported_type"
INVALID_LINK: Final = "net.invalid_url"

_MISSING_TITLE = re.compile(r"\b(?:404|410|403|not found|page not found|gone|forbidden|access denied)\b", re.I)
_MISSING_PATH = re.compile(r"/(?:404|not[-_]?found)(?:\.html?)?/?$", re.I)
_DROPPED = ("script", "style", "noscript", "template", "svg", "iframe", "head")


def checked_link(link: str) -> httpx.URL:
    from tooldeck.net.guard import check_url

    if len(link) > MAX_LINK_CHARS:
        raise ToolCallError(INVALID_LINK, f"the link is {len(link):,} characters; at most {MAX_LINK_CHARS:,} are "
                            "accepted.")
    url = check_url(link.strip())
    if url.userinfo:
        raise ToolCallError(INVALID_LINK, "the link carries credentials (user:password@); remove them.")
    if "." not in url.host and ":" not in url.host:
        raise ToolCallError(INVALID_LINK, f"`{url.host}` is not a public host name (it has no dot).")
    return url.copy_with(fragment=None)


def to_markdown(html: str, keep_links: bool) -> tuple[str, str]:
    """(title, markdown) of an HTML page; scripts, styles and the head are dropped."""
    from bs4 import BeautifulSoup
    from markdownify import ATX, MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup.find_all(_DROPPED):
        tag.decompose()
    strip = [] if keep_links else ["a"]
    markdown = MarkdownConverter(heading_style=ATX, strip=strip, bullets="-").convert_soup(soup)
    return title, re.sub(r"\n{3,}", "\n\n", markdown).strip()


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CONTENT_CHARS else text[:MAX_CONTENT_CHARS] + TRUNCATED_NOTE


async def fetch(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.net import skip_cache
    from tooldeck.net.clients import client_for

    url = checked_link(args["link"])
    key = str(url)
    home = ctx.run.home
    skips = skip_cache.SkipCache(home / "cache" / "fetch-failures.json") if home is not None else None
    if skips is not None and not args.get("force"):
        blocked = skips.blocked(key)
        if blocked is not None:
            raise ToolCallError(BLOCKED, f"{key} blocked: it failed recently ({blocked.reason}). Try another page, "
                                "or pass force=true to fetch it again.")
    with http_errors(f"{key} did not answer within {FETCH_TIMEOUT_S:g} s.",
                     lambda exc: f"fetching {key} failed: {reason(exc)}."):
        client = client_for(ctx.run, ctx.invocation.profile.net_allow)
        async with client.stream("GET", url, headers={"accept": "text/html,application/xhtml+xml,*/*;q=0.8"},
                                 timeout=FETCH_TIMEOUT_S) as response:
            data, _ = await read_capped(response, MAX_PAGE_BYTES)
    status = response.status_code
    if status >= 400:
        seconds = skip_cache.SERVER_ERROR_S if status >= 500 else skip_cache.CLIENT_ERROR_S
        _remember(skips, key, f"http {status}", seconds)
        raise ToolCallError(FAILED, f"{key} answered http {status}; it will be skipped "
                            f"{'for 12 hours' if status >= 500 else 'from now on'} unless force=true.")
    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    text = data.decode(response.charset_encoding or "utf-8", "replace")
    kind = args.get("type") or "markdown"
    final = str(response.url)
    if content_type in ("", "text/html", "application/xhtml+xml"):
        title, markdown = await asyncio.to_thread(to_markdown, text, bool(args.get("keep_links")))
        if _MISSING_TITLE.search(title) or _MISSING_PATH.search(response.url.path):
            _remember(skips, key, "the page says it is missing", skip_cache.CLIENT_ERROR_S)
            raise ToolCallError(FAILED, f"{key} is a 'not found' page (title: {title!r}); it will be skipped "
                                "from now on unless force=true.")
    elif content_type.startswith("text/") or content_type.endswith(("json", "xml")):
        title, markdown = "", text.strip()
    else:
        raise ToolCallError(UNSUPPORTED, f"{key} is `{content_type}`, not a page; use download_file to save it.")
    if not markdown.strip():
        _remember(skips, key, "the page was empty", skip_cache.EMPTY_S)
        raise ToolCallError(EMPTY, f"{key} has no text content; it will be skipped for 72 hours unless force=true.")
    content = _cut(text if kind == "html" else markdown)
    if kind == "json":
        content = json_text({"url": final, "title": title, "content": content})
    if args.get("save") or args.get("save_to"):
        return await _save(ctx, args.get("save_to") or "output/page.md", content)
    return ToolOutput(f"Web page content:\n---\n{content}\n---", {"url": final, "title": title,
                                                                    "chars": len(content)})


def _remember(skips: skip_cache.SkipCache | None, url: str, reason: str, seconds: float | None) -> None:
    if skips is not None:
        skips.add(url, reason, seconds)


async def _save(ctx: CallContext, rel: str, content: str) -> ToolOutput:
    store, policy = workspace(ctx)
    loc = store.locate(policy, rel, write=True)
    _, effect = await write_new_file(store, loc, content.encode("utf-8"), chars=len(content), exists=ToolCallError(
        "fetch.file_exists", f"`{loc.shown}` already exists; give another `save_to`."))
    return ToolOutput(f"Downloaded {len(content):,} chars to {loc.shown}", {"path": loc.shown, "chars": len(content)},
                      resource_refs=[loc.shown], effects=[effect])


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("fetch_page"),
    title="Fetch a web page",
    description="Fetch a public web page and return its text as markdown (cut at 100 KiB). `keep_links` keeps "
                "the links; `type` html gives the page as sent, json gives {url, title, content}; `save_to` "
                "writes it to a new workspace file instead. A page that failed recently is skipped unless "
                "`force` is true.",
    input_schema={
        "type": "object",
        "properties": {
            "link": {"type": "string", "description": "Absolute http:// or https:// URL."},
            "keep_links": {"type": "boolean", "description": "Keep links in the markdown (default false)."},
            "type": {"type": "string", "enum": ["markdown", "html", "json"], "description": "Default markdown."},
            "save": {"type": "boolean", "description": "Write the content to `output/page.md` (or `save_to`)."},
            "save_to": {"type": "string", "description": "Workspace path of a new file for the content."},
            "force": {"type": "boolean", "description": "Fetch even if the page failed recently."},
        },
        "required": ["link"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, fetch)]
