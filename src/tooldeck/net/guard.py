"""The SSRF guard: every outbound HTTP request a tool makes goes through a client from `guarded_client`.

The check happens where the connection is made, not before the request: the guard's network backend
resolves the host itself, checks **every** address it resolves to, and connects to one of those
checked addresses (never to the name, which the OS would resolve again), so a DNS answer that changes
between a check and the connect (DNS rebinding) cannot slip through. Redirects open new connections
and are checked the same way. Refused: schemes other than http and https, and addresses that are
loopback, link-local (cloud metadata services), private, unique-local, unspecified, multicast,
reserved or otherwise not global — IPv4 hidden in IPv6 (mapped, 6to4, Teredo, NAT64) included.
`NetPolicy.allow` (the Profile's `net_allow`) exempts hosts by name or glob and addresses by IP or
CIDR. Proxies from the environment are never used (they would make the checked address the proxy's).
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import httpcore
import httpx

from tooldeck.core.errors import ToolCallError

NET_REFUSED: Final = "net.refused"
"""A URL or address the guard does not let a tool reach."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]

_NAT64: Final = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
ALLOWED_SCHEMES: Final = frozenset({"http", "https"})


def blocked_reason(address: IPAddress) -> str | None:
    """Why a tool may not connect to `address`, or None when it is a global unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return f"{inner} inside an IPv6 address" if inner else None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services live)"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private-network address"
    if not address.is_global:
        return "a reserved, non-public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


@dataclass(frozen=True, slots=True)
class NetPolicy:
    """Which otherwise refused destinations a tool may reach: host names or globs (`*.corp.example`),
    IP addresses and CIDR networks (`10.0.0.0/8`). Empty: only public addresses."""

    allow: tuple[str, ...] = ()
    _hosts: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        hosts: list[str] = []
        networks: list[IPNetwork] = []
        for entry in self.allow:
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                hosts.append(entry.lower().rstrip("."))
        object.__setattr__(self, "_hosts", tuple(hosts))
        object.__setattr__(self, "_networks", tuple(networks))

    @classmethod
    def of(cls, entries: Iterable[str]) -> NetPolicy:
        return cls(tuple(entries))

    def host_allowed(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self._hosts)

    def address_allowed(self, address: IPAddress) -> bool:
        return any(address.version == net.version and address in net for net in self._networks)


def check_url(url: str | httpx.URL) -> httpx.URL:
    """The parsed URL, or `net.refused` for a scheme other than http(s) or a URL without a host."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolCallError("net.invalid_url", f"`{url}` is not a valid URL ({exc}); give an absolute "
                            "http:// or https:// URL.") from None
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise ToolCallError(NET_REFUSED, f"the scheme `{parsed.scheme or '(none)'}:` is not allowed; only http "
                            "and https URLs can be fetched.")
    if not parsed.host:
        raise ToolCallError(NET_REFUSED, f"`{url}` has no host; give an absolute URL such as "
                            "https://example.com/path.")
    return parsed


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the guard at connect time (see the module docstring)."""

    def __init__(self, policy: NetPolicy, resolve: Resolver | None = None) -> None:
        self.policy = policy
        self._resolve = resolve or system_resolver
        self._inner = httpcore.AnyIOBackend()

    async def checked_addresses(self, host: str, port: int) -> list[str]:
        """The addresses of `host` to connect to, each checked; `net.refused` if any is refused."""
        literal = _literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                resolved = await self._resolve(host, port)
            except OSError as exc:
                raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
            if not resolved:
                raise httpcore.ConnectError(f"{host} resolved to no address")
            if self.policy.host_allowed(host):
                return resolved
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolved]
        for address in addresses:
            reason = blocked_reason(address)
            if reason is not None and not self.policy.address_allowed(address):
                shown = host if literal is not None else f"{host} ({address})"
                raise ToolCallError(NET_REFUSED, f"{shown} is {reason}; tools may only reach public addresses. "
                                    "Use a public URL, or ask the user to add the host to the Profile's "
                                    "`net_allow`.")
        return [str(a) for a in addresses]

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Iterable[Any] | None = None
                          ) -> httpcore.AsyncNetworkStream:
        last: Exception | None = None
        for address in await self.checked_addresses(host, port):
            try:
                return await self._inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        raise ToolCallError(NET_REFUSED, "tools may not connect to Unix sockets.")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every guarded client: loading the CA bundle costs tens of ms, more
    than the request itself (an SSLContext is safe to share between connections and threads)."""
    return httpx.create_ssl_context()


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over a connection pool whose every connection is made by `GuardedBackend`."""

    def __init__(self, policy: NetPolicy, resolve: Resolver | None = None) -> None:
        ssl_context = _ssl_context()
        super().__init__(verify=ssl_context, trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(ssl_context=ssl_context, max_connections=20,
                                                  network_backend=GuardedBackend(policy, resolve))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        check_url(request.url)
        return await super().handle_async_request(request)


def guarded_client(policy: NetPolicy, *, timeout: float = 60.0, max_redirects: int = 5,
                   resolve: Resolver | None = None) -> httpx.AsyncClient:
    """An httpx client for tool traffic: every connection checked, redirects followed and checked."""
    return httpx.AsyncClient(transport=GuardedTransport(policy, resolve), trust_env=False, follow_redirects=True,
                             max_redirects=max_redirects, timeout=timeout)
