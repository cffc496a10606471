"""Search backends for `search_web`: a small interface and the two keyless defaults Agenvoy uses,
DuckDuckGo's HTML results page for the web and Google News' RSS search for news.

A backend turns (query, time range, locale) into a request and the answer into hits; the tool sends
the request through the SSRF guard's client. The endpoints are Profile keys (`search_web_url`,
`search_news_url`) so that a host can point them at a mirror (and tests at a loopback server that
answers in the same formats).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Final, Protocol
from urllib.parse import parse_qs, urlparse

import httpx

WEB_URL: Final = "https://html.duckduckgo.com/html/"
NEWS_URL: Final = "https://news.google.com/rss/search"
MAX_HITS: Final = 10
_DDG_RANGE: Final = {"1h": "d", "6h": "d", "24h": "d", "7d": "w", "30d": "m", "1y": "y"}


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str = ""
    published: str = ""
    source: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"title": self.title, "url": self.url}
        for key in ("snippet", "published", "source"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


class SearchBackend(Protocol):
    def request(self, query: str, time_range: str, ceid: str) -> httpx.Request: ...

    def parse(self, body: bytes) -> list[Hit]: ...


class DuckDuckGoHtml:
    """POST `q` (and `df` for the time range) to DuckDuckGo's HTML page; results are `a.result__a` links
    (often wrapped in a `/l/?uddg=<target>` redirect) with `.result__snippet` text."""

    def __init__(self, url: str = WEB_URL) -> None:
        self.url = url

    def request(self, query: str, time_range: str, ceid: str) -> httpx.Request:
        form = {"q": query, "df": _DDG_RANGE.get(time_range, "")}
        return httpx.Request("POST", self.url, data=form, headers={"user-agent": "Mozilla/5.0 (tooldeck)"})

    def parse(self, body: bytes) -> list[Hit]:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(body, "html.parser")
        hits: list[Hit] = []
        for result in soup.select(".result"):
            link = result.select_one("a.result__a")
            if link is None or not link.get("href"):
                continue
            snippet = result.select_one(".result__snippet")
            hits.append(Hit(link.get_text(" ", strip=True), _unwrap(str(link["href"])),
                            snippet.get_text(" ", strip=True) if snippet else ""))
            if len(hits) >= MAX_HITS:
                break
        return hits


def _unwrap(href: str) -> str:
    parsed = urlparse(href if "//" in href else f"https://duckduckgo.com{href}")
    if parsed.path.startswith("/l/"):
        target = parse_qs(parsed.query).get("uddg")
        if target:
            return target[0]
    return href if not href.startswith("//") else f"https:{href}"


class GoogleNewsRss:
    """GET Google News' RSS search (`q` with `when:<range>`, `hl`/`gl`/`ceid` from the locale)."""

    def __init__(self, url: str = NEWS_URL) -> None:
        self.url = url

    def request(self, query: str, time_range: str, ceid: str) -> httpx.Request:
        country, _, language = ceid.partition(":")
        params = {"q": f"{query} when:{time_range}", "hl": language or "en", "gl": country or "US",
                  "ceid": ceid}
        return httpx.Request("GET", self.url, params=params)

    def parse(self, body: bytes) -> list[Hit]:
        try:
            root = ET.fromstring(body)  # expat refuses entity expansion bombs (Python ≥ 3.11 bundles expat ≥ 2.4)
        except ET.ParseError as exc:
            raise ValueError(f"the news feed is not valid RSS ({exc})") from None
        hits: list[Hit] = []
        for item in root.iter("item"):
            title, link = item.findtext("title") or "", item.findtext("link") or ""
            if not link:
                continue
            hits.append(Hit(title.strip(), link.strip(), published=(item.findtext("pubDate") or "").strip(),
                            source=(item.findtext("source") or "").strip()))
            if len(hits) >= MAX_HITS:
                break
        return hits
