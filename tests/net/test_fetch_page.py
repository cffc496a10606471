"""`fetch_page` through a real Runtime against a loopback server: markdown, html and json answers, the
100 KiB cut, link checks, saving, and the failure skip-cache (shared by processes of one home)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.builtins.net_fetch import MAX_CONTENT_CHARS, TRUNCATED_NOTE, to_markdown
from tooldeck.net.skip_cache import SkipCache

PAGE = (b"<html><head><title>Hello page</title><script>var secret = 1;</script><style>p{}</style></head>"
        b"<body><h1>Welcome</h1><p>Read <a href='/more'>more here</a>.</p><ul><li>one</li><li>two</li></ul>"
        b"</body></html>")
HTML = {"content-type": "text/html; charset=utf-8"}


@pytest.fixture
def server() -> Any:
    with loopback_server() as s:
        yield s


@pytest.fixture
def fetch(make_runtime: MakeRuntime) -> Any:
    rt = make_runtime(loading="eager", allow=["builtin:fetch_page"], net_allow=["127.0.0.1"],
                      result_inline_limit=1_000_000)  # inline: the tool's own 100 KiB cut is under test

    def call(args: dict[str, Any]) -> Any:
        [result] = rt.invocation(run_id="r1").run([{"id": "f", "name": "fetch_page", "arguments": args}])
        return result

    call.runtime = rt  # type: ignore[attr-defined]
    return call


def test_a_page_as_markdown_html_and_json(fetch: Any, server: LoopbackServer) -> None:
    server.answers["/p"] = Answer(200, PAGE, HTML)
    md = fetch({"link": f"{server.url}/p#section"})
    assert not md.is_error, md.content
    assert md.content.startswith("Web page content:\n---\n# Welcome") and md.content.endswith("\n---")
    assert "Read more here." in md.content and "- one" in md.content
    assert "secret" not in md.content and "Hello page" not in md.content and "](/more)" not in md.content
    assert server.requests[-1].path == "/p"  # the fragment is not sent
    linked = fetch({"link": f"{server.url}/p", "keep_links": True})
    assert "[more here](/more)" in linked.content
    raw = fetch({"link": f"{server.url}/p", "type": "html"})
    assert "<script>var secret = 1;</script>" in raw.content
    as_json = json.loads(fetch({"link": f"{server.url}/p", "type": "json"}).content.split("---\n", 1)[1][:-4])
    assert as_json["title"] == "Hello page" and as_json["content"].startswith("# Welcome")


def test_long_content_is_cut_at_100_kib(fetch: Any, server: LoopbackServer) -> None:
    server.answers["/long"] = Answer(200, b"<p>" + b"word " * 40_000 + b"</p>", HTML)
    result = fetch({"link": f"{server.url}/long"})
    body = result.content.removeprefix("Web page content:\n---\n").removesuffix("\n---")
    assert body.endswith(TRUNCATED_NOTE) and len(body) == MAX_CONTENT_CHARS + len(TRUNCATED_NOTE)


@pytest.mark.parametrize(("link", "code"), [
    ("file:///etc/passwd", "net.refused"), ("http://user:pw@example.com/", "net.invalid_url"),
    ("http://intranet/", "net.invalid_url"), ("https://example.com/" + "a" * 2100, "net.invalid_url"),
])
def test_links_refused_before_any_request(fetch: Any, link: str, code: str) -> None:
    result = fetch({"link": link})
    assert result.is_error and result.error_code == code


def test_failures_are_skipped_until_forced(fetch: Any, server: LoopbackServer) -> None:
    server.answers["/gone"] = Answer(404, b"no")
    first = fetch({"link": f"{server.url}/gone"})
    assert first.is_error and first.error_code == "fetch.failed" and "http 404" in first.content
    again = fetch({"link": f"{server.url}/gone"})
    assert again.error_code == "fetch.blocked" and "force=true" in again.content
    assert len(server.requests) == 1
    forced = fetch({"link": f"{server.url}/gone", "force": True})
    assert forced.error_code == "fetch.failed" and len(server.requests) == 2


def test_skip_times_per_kind_of_failure(fetch: Any, server: LoopbackServer) -> None:
    server.answers["/boom"] = Answer(503, b"busy")
    server.answers["/soft"] = Answer(200, b"<title>Page Not Found</title><p>sorry</p>", HTML)
    server.answers["/empty"] = Answer(200, b"<html><body><script>x()</script></body></html>", HTML)
    server.answers["/pdf"] = Answer(200, b"%PDF-1.4", {"content-type": "application/pdf"})
    assert fetch({"link": f"{server.url}/boom"}).error_code == "fetch.failed"
    assert fetch({"link": f"{server.url}/soft"}).error_code == "fetch.failed"
    assert fetch({"link": f"{server.url}/empty"}).error_code == "fetch.empty"
    assert fetch({"link": f"{server.url}/pdf"}).error_code == "fetch.unsupported_type"
    cache = SkipCache(fetch.runtime.home / "cache" / "fetch-failures.json")
    now = time.time()
    boom, soft, empty = (cache.blocked(f"{server.url}/{p}") for p in ("boom", "soft", "empty"))
    assert boom is not None and boom.until is not None and abs(boom.until - now - 12 * 3600) < 60
    assert soft is not None and soft.until is None
    assert empty is not None and empty.until is not None and abs(empty.until - now - 72 * 3600) < 60
    assert cache.blocked(f"{server.url}/boom", now=now + 13 * 3600) is None
    assert cache.blocked(f"{server.url}/pdf") is None


def test_save_writes_a_new_workspace_file(fetch: Any, server: LoopbackServer) -> None:
    server.answers["/p"] = Answer(200, PAGE, HTML)
    result = fetch({"link": f"{server.url}/p", "save_to": "scratch/page.md"})
    assert result.content.startswith("Downloaded ") and result.content.endswith("chars to scratch/page.md")
    [run] = fetch.runtime.runs.values()
    assert (run.workspace_root / "scratch/page.md").read_text().startswith("# Welcome")
    assert fetch({"link": f"{server.url}/p", "save_to": "scratch/page.md"}).error_code == "fetch.file_exists"


_WRITER = """
import sys
from pathlib import Path
from tooldeck.net.skip_cache import SkipCache
cache = SkipCache(Path(sys.argv[1]))
for i in range(100):
    cache.add(f"https://x.example/{sys.argv[2]}/{i}", "http 404", None)
"""


def test_two_processes_sharing_a_home_lose_no_entries(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "fetch-failures.json"
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name]) for name in ("a", "b")]
    assert [p.wait(120) for p in procs] == [0, 0]
    cache = SkipCache(path)
    assert all(cache.blocked(f"https://x.example/{n}/{i}") for n in "ab" for i in range(100))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>/ab pscripttitle=\"'&;#!-[]()*_`\n")), max_size=120))
def test_the_converter_takes_any_markup(html: str) -> None:
    title, markdown = to_markdown(html, keep_links=False)
    assert isinstance(title, str) and isinstance(markdown, str)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_a_damaged_cache_file_is_only_a_missing_hint(tmp_path_factory: pytest.TempPathFactory, junk: bytes) -> None:
    path = tmp_path_factory.mktemp("cache") / "fetch-failures.json"
    path.write_bytes(junk)
    cache = SkipCache(path)
    assert cache.blocked("https://x.example/") is None
    cache.add("https://x.example/", "http 404", None)
    assert cache.blocked("https://x.example/") is not None
