"""`search_web` through a real Runtime against loopback endpoints that answer in DuckDuckGo's HTML
results format and Google News' RSS format: what is sent, what comes back, partial and total
failure, the 30-minute reuse, and parsers that take any bytes."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, unquote_plus

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.net.search import DuckDuckGoHtml, GoogleNewsRss

DDG = b"""<html><body><div class="results">
<div class="result results_links web-result"><h2><a class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fpython&amp;rut=abc">Python <b>docs</b></a></h2>
<a class="result__snippet" href="#">The official <b>Python</b> documentation.</a></div>
<div class="result results_links web-result"><h2><a class="result__a" href="https://direct.example/x">Direct</a></h2>
</div></div></body></html>"""
RSS = b"""<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>News</title>
<item><title>Python 4 announced</title><link>https://news.example/a</link>
<pubDate>Tue, 01 Dec 2026 10:00:00 GMT</pubDate><source url="https://news.example">News Example</source></item>
</channel></rss>"""


@pytest.fixture
def server() -> Any:
    with loopback_server({"/ddg": Answer(200, DDG, {"content-type": "text/html"}),
                          "/news": Answer(200, RSS, {"content-type": "application/rss+xml"})}) as s:
        yield s


@pytest.fixture
def search(make_runtime: MakeRuntime, server: LoopbackServer) -> Any:
    rt = make_runtime(loading="eager", allow=["builtin:search_web"], net_allow=["127.0.0.1"],
                      search_web_url=f"{server.url}/ddg", search_news_url=f"{server.url}/news")

    def call(args: dict[str, Any]) -> Any:
        [result] = rt.invocation(run_id="r1").run([{"id": "s", "name": "search_web", "arguments": args}])
        return result

    return call


def test_web_and_news_together(search: Any, server: LoopbackServer) -> None:
    result = search({"query": "python release"})
    assert not result.is_error, result.content
    answer = json.loads(result.content)
    assert answer["web"] == [{"title": "Python docs", "url": "https://example.org/python",
                              "snippet": "The official Python documentation."},
                             {"title": "Direct", "url": "https://direct.example/x"}]
    assert answer["news"] == [{"title": "Python 4 announced", "url": "https://news.example/a",
                               "published": "Tue, 01 Dec 2026 10:00:00 GMT", "source": "News Example"}]
    sent = {r.path.split("?")[0]: r for r in server.requests}
    assert sent["/ddg"].method == "POST" and parse_qs(sent["/ddg"].body.decode()) == {"q": ["python release"],
                                                                                      "df": ["w"]}
    news_query = parse_qs(sent["/news"].path.split("?", 1)[1])
    assert news_query["q"] == ["python release when:7d"] and news_query["ceid"] == ["US:en"]


def test_aliases_ranges_and_locale(search: Any, server: LoopbackServer) -> None:
    assert not search({"keyword": "x", "source": "news", "time_range": "30d", "ceid": "TW:zh-Hant"}).is_error
    [sent] = server.requests
    assert "when:7d" in unquote_plus(sent.path) and "hl=zh-Hant" in sent.path and "gl=TW" in sent.path
    missing = search({"source": "web"})
    assert missing.is_error and missing.error_code == "search.query_required"


def test_one_backend_down_still_answers_and_both_down_is_an_error(search: Any, server: LoopbackServer) -> None:
    server.answers["/news"] = Answer(500, b"down")
    half = json.loads(search({"q": "a"}).content)
    assert len(half["web"]) == 2 and half["news"] == [] and half["news_error"] == "http 500"
    server.answers["/ddg"] = Answer(503, b"busy")
    server.answers["/news"] = Answer(200, b"<rss><unclosed>")
    both = search({"q": "b"})
    assert both.is_error and both.error_code == "search.failed"
    assert "web: http 503" in both.content and "news:" in both.content


def test_answers_are_reused_for_30_minutes_unless_forced(search: Any, server: LoopbackServer) -> None:
    first = search({"query": "same", "source": "web"})
    again = search({"query": "same", "source": "web"})
    assert first.content == again.content and len(server.requests) == 1
    search({"query": "same", "source": "web", "force": True})
    assert len(server.requests) == 2


def test_an_entity_bomb_in_the_feed_is_refused_quickly() -> None:
    entities = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * 10 if i else "x" * 10}">' for i in range(10))
    bomb = f'<?xml version="1.0"?><!DOCTYPE r [{entities}]><rss><item><title>&e9;</title><link>l</link></item></rss>'
    with pytest.raises(ValueError, match="not valid RSS"):
        GoogleNewsRss().parse(bomb.encode())


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(alphabet=st.sampled_from(list("<>/=\"' aresultitemlink_.&;")),
                                         max_size=200).map(str.encode))
def test_parsers_take_any_bytes(body: bytes) -> None:
    assert isinstance(DuckDuckGoHtml().parse(body), list)
    try:
        assert isinstance(GoogleNewsRss().parse(body), list)
    except ValueError as exc:
        assert "not valid RSS" in str(exc)
