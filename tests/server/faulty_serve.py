"""A `tooldeck serve` whose Runtime has tools that fault, for the fault tests:

    python -m tests.server.faulty_serve HOME stdio
    python -m tests.server.faulty_serve HOME http      # prints the URL like `tooldeck serve`

`host_fault` raises `HostFault` (a fault of the host: it propagates out of the pipeline), `broken` raises a
plain exception inside the tool (a tool-level error: it becomes a result with isError).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import anyio

from tooldeck.core.errors import HostFault
from tooldeck.runtime import Runtime
from tooldeck.server.address import HttpAddress, bind_socket
from tooldeck.server.mcp_server import ServeOptions, TooldeckMCPServer
from tooldeck.server.security import HttpGuard

SECRET = "/secret/disk-7"


def build(home: Path) -> TooldeckMCPServer:
    runtime = Runtime(home, profile={"loading": "eager"}, records=True)

    @runtime.tool("faulty")
    def host_fault(n: int = 0) -> str:
        """Always a host fault."""
        raise HostFault("host.test_fault", f"the disk at {SECRET} is on fire")

    @runtime.tool("faulty")
    def broken(n: int = 0) -> str:
        """Always a tool error."""
        raise RuntimeError(f"tool bug near {SECRET}")

    return TooldeckMCPServer(runtime, ServeOptions(watch_interval_s=None))


def main() -> None:
    home, transport = Path(sys.argv[1]), sys.argv[2]
    logging.basicConfig(level="WARNING", stream=sys.stderr)
    mcp = build(home)
    try:
        if transport == "stdio":
            anyio.run(mcp.run_stdio)
            return
        sock = bind_socket(HttpAddress("127.0.0.1", 0))

        def ready() -> None:
            print(f"tooldeck serving MCP on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)

        anyio.run(mcp.serve_http, sock, HttpGuard.build("127.0.0.1"), ready)
    finally:
        mcp.runtime.close()


if __name__ == "__main__":
    main()
