"""The SSRF guard: which addresses it refuses (IPv4 hidden in IPv6 included), that a refused request
never reaches the server, that the connect goes to the address that was checked, and that redirects
are checked hop by hop."""

from __future__ import annotations

import asyncio
import ipaddress

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.net.support import Answer, loopback_server
from tooldeck.core.errors import ToolCallError
from tooldeck.net.guard import NetPolicy, blocked_reason, check_url, guarded_client


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
    "100.64.0.1", "100.100.100.200", "224.0.0.1", "255.255.255.255", "192.0.2.1", "::1", "::", "fe80::1",
    "fd00:ec2::254", "fc00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "2002:7f00:1::", "64:ff9b::a9fe:a9fe",
    "2001:0:4136:e378:8000:63bf:80ff:fffe", "ff02::1",
])
def test_non_public_addresses_are_refused(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8",
                                     "64:ff9b::808:808"])
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


_v4 = st.integers(min_value=0, max_value=2**32 - 1).map(ipaddress.IPv4Address)


@settings(derandomize=True, max_examples=500, deadline=None)
@given(_v4)
def test_an_ipv4_address_is_judged_the_same_inside_every_ipv6_wrapping(v4: ipaddress.IPv4Address) -> None:
    direct = blocked_reason(v4) is None
    for wrapped in (f"::ffff:{v4}", f"64:ff9b::{v4}"):
        assert (blocked_reason(ipaddress.ip_address(wrapped)) is None) == direct, wrapped
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(v4) << 80))
    assert (blocked_reason(sixtofour) is None) == direct or blocked_reason(v4) is not None


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_check_url_accepts_only_http_and_https_with_a_host(text: str) -> None:
    try:
        url = check_url(text)
    except ToolCallError as exc:
        assert exc.code in ("net.refused", "net.invalid_url")
    else:
        assert url.scheme in ("http", "https") and url.host


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "https://", "gopher://x", "/relative"])
def test_urls_the_guard_refuses_before_connecting(url: str) -> None:
    with pytest.raises(ToolCallError) as caught:
        check_url(url)
    assert caught.value.code in ("net.refused", "net.invalid_url")


def _get(client: httpx.AsyncClient, url: str) -> httpx.Response:
    async def go() -> httpx.Response:
        async with client:
            return await client.get(url)
    return asyncio.run(go())


def test_a_loopback_request_is_refused_and_never_reaches_the_server() -> None:
    with loopback_server({"/": Answer(body=b"secret")}) as server:
        for url in (server.url, f"http://localhost:{server.port}/", f"http://[::ffff:127.0.0.1]:{server.port}/"):
            with pytest.raises(ToolCallError) as caught:
                _get(guarded_client(NetPolicy()), url)
            assert caught.value.code == "net.refused" and "net_allow" in caught.value.message
        assert server.connections == 0 and server.requests == []


def test_net_allow_by_address_or_by_host() -> None:
    with loopback_server({"/": Answer(body=b"hello")}) as server:
        assert _get(guarded_client(NetPolicy(("127.0.0.0/8",))), server.url).text == "hello"
        by_name = guarded_client(NetPolicy(("localhost",)))
        assert _get(by_name, f"http://localhost:{server.port}/").text == "hello"


def test_the_connection_goes_to_the_checked_address_not_to_a_new_lookup() -> None:
    lookups: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["127.0.0.1"]

    with loopback_server({"/": Answer(body=b"pinned")}) as server:
        # `pinned.invalid` exists in no DNS: the request can only succeed by connecting to what the guard
        # resolved and checked (127.0.0.1, allowed by address here).
        client = guarded_client(NetPolicy(("127.0.0.1",)), resolve=resolver)
        assert _get(client, f"http://pinned.invalid:{server.port}/").text == "pinned"
        assert lookups == ["pinned.invalid"]
        refusing = guarded_client(NetPolicy(), resolve=resolver)
        with pytest.raises(ToolCallError, match=r"pinned.invalid \(127.0.0.1\) is a loopback address"):
            _get(refusing, f"http://pinned.invalid:{server.port}/")
        assert server.connections == 1


def test_every_resolved_address_is_checked() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["8.8.8.8", "10.0.0.5"]

    with pytest.raises(ToolCallError, match=r"10.0.0.5\) is a private-network address"):
        _get(guarded_client(NetPolicy(), resolve=resolver), "http://mixed.invalid/")


def test_redirects_are_checked_hop_by_hop() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with loopback_server() as server:
        server.answers["/start"] = Answer(302, b"", {"location": f"http://inner.invalid:{server.port}/secret"})
        server.answers["/file"] = Answer(302, b"", {"location": "file:///etc/passwd"})
        server.answers["/secret"] = Answer(body=b"secret")
        client = guarded_client(NetPolicy(("outer.invalid",)), resolve=resolver)
        with pytest.raises(ToolCallError, match=r"inner\.invalid"):
            _get(client, f"http://outer.invalid:{server.port}/start")
        with pytest.raises(ToolCallError, match="scheme `file:` is not allowed"):
            _get(guarded_client(NetPolicy(("outer.invalid",)), resolve=resolver),
                 f"http://outer.invalid:{server.port}/file")
        assert [r.path for r in server.requests] == ["/start", "/file"]


@pytest.mark.parametrize("host", ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::1]", "[::ffff:7f00:1]",
                                  "[0:0:0:0:0:0:0:1]", "LOCALHOST"])
def test_encoded_loopback_hosts_are_refused_before_connecting(host: str) -> None:
    with loopback_server({"/": Answer(body=b"secret")}) as server:
        url = f"http://{host}:{server.port}/"
        with pytest.raises(ToolCallError) as caught:  # as the tools do: the URL first, then the request
            _get(guarded_client(NetPolicy()), str(check_url(url)))
        assert caught.value.code in ("net.refused", "net.invalid_url")  # httpx refuses some spellings itself
        assert server.connections == 0


def test_a_redirect_to_the_metadata_address_is_refused() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with loopback_server() as server:
        server.answers["/meta"] = Answer(302, b"", {"location": "http://169.254.169.254/latest/meta-data/"})
        with pytest.raises(ToolCallError, match=r"169\.254\.169\.254 is a link-local address"):
            _get(guarded_client(NetPolicy(("site.invalid",)), resolve=resolver), f"http://site.invalid:{server.port}/meta")


def test_dns_rebinding_between_two_connections_is_caught_on_the_second() -> None:
    answers = iter([["127.0.0.1"], ["10.0.0.7"]])

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers)

    with loopback_server({"/": Answer(body=b"first")}) as server:
        async def go() -> None:
            # keep-alive off so the second request opens (and checks) a new connection
            async with guarded_client(NetPolicy(("127.0.0.1",)), resolve=rebinding) as client:
                first = await client.get(f"http://rebind.invalid:{server.port}/", headers={"connection": "close"})
                assert first.text == "first"
                with pytest.raises(ToolCallError, match=r"rebind\.invalid \(10\.0\.0\.7\) is a private-network"):
                    await client.get(f"http://rebind.invalid:{server.port}/")
        asyncio.run(go())
        assert len(server.requests) == 1
