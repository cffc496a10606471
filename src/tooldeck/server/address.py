"""`--http HOST:PORT` parsing and choosing a free port."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from tooldeck.core.errors import TooldeckError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8808
MCP_PATH = "/mcp"
BAD_ADDRESS = "serve.http_address_invalid"


@dataclass(frozen=True, slots=True)
class HttpAddress:
    host: str
    port: int
    """0 means: the default port when it is free, else any free port."""

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port if port is not None else self.port}{MCP_PATH}"


def parse_http_address(text: str) -> HttpAddress:
    """`HOST:PORT`, `HOST`, `:PORT`, `PORT` or `[V6]:PORT`. A port of 0 (or none) picks a free one."""
    raw = text.strip()
    hint = "expected HOST:PORT, e.g. 127.0.0.1:8808, [::1]:8808, :8808 or 127.0.0.1 (free port)"
    if not raw:
        raise TooldeckError(BAD_ADDRESS, f"--http value is empty; {hint}")
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0:
            raise TooldeckError(BAD_ADDRESS, f"--http {text!r} has no closing `]`; {hint}")
        host, rest = raw[1:end], raw[end + 1:]
        if rest and not rest.startswith(":"):
            raise TooldeckError(BAD_ADDRESS, f"--http {text!r}: unexpected {rest!r} after the address; {hint}")
        port_text = rest[1:]
    elif raw.isdigit():
        host, port_text = DEFAULT_HOST, raw
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
    elif ":" in raw:
        raise TooldeckError(BAD_ADDRESS, f"--http {text!r}: put an IPv6 address in brackets, e.g. [::1]:8808")
    else:
        host, port_text = raw, ""
    host = host or DEFAULT_HOST
    if port_text and not port_text.isdigit():
        raise TooldeckError(BAD_ADDRESS, f"--http {text!r}: port {port_text!r} is not a number; {hint}")
    port = int(port_text) if port_text else 0
    if not 0 <= port <= 65535:
        raise TooldeckError(BAD_ADDRESS, f"--http {text!r}: port {port} is outside 0-65535")
    return HttpAddress(host, port)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def bind_socket(address: HttpAddress) -> socket.socket:
    """A listening socket: the asked port, or for port 0 the default port when free, else an ephemeral one.

    Binding here (not in uvicorn) means the printed URL is the real one and no other process can take the
    port between choosing and listening.
    """
    candidates = [address.port] if address.port else [DEFAULT_PORT, 0]
    last: OSError | None = None
    for port in candidates:
        # proto=IPPROTO_TCP matters: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say they are TCP,
        # and without it every HTTP response waits ~40 ms for a delayed ACK.
        sock = socket.socket(_family(address.host), socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address.host, port))
        except OSError as exc:
            sock.close()
            last = exc
            continue
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    raise TooldeckError("serve.http_bind_failed",
                        f"cannot listen on {address.host}:{address.port or DEFAULT_PORT}: {last}. "
                        "Pick another port with --http HOST:PORT (port 0 picks a free one).")
