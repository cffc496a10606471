"""What pinned MCP tool definitions cost (issue 19 item 7), measured in one run beside a baseline:

- `sync_pins (unchanged)`: the check `McpManager.descriptors()` now makes before every snapshot (the
  pins store's header change counter), beside `os.stat` of the same file (the baseline) and the
  descriptors read it guards;
- `sync_pins (changed)`: the reload after another process approved something (one SELECT per server
  + rebuild of the offered descriptors), for 1 server of 100 tools;
- `rebuild`: what is offered, rebuilt from a catalog of 100 tools, for a pinned server (each tool's digest,
  cached per catalog, against its pin) and an unpinned one (no pin check);
- `scan`: the poisoning detector on a 300-character clean description and on a 256 KiB one.

    python -m bench.pins_bench
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from bench.timing import median_us, report
from tooldeck.records.registrations import RegistrationStore
from tooldeck.sources.mcp import catalog as cat
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.poisoning import scan_text
from tooldeck.sources.mcp.servers import Servers
from tooldeck.sources.mcp.state import McpDirs

TOOLS = 100
DESCRIPTION = ("Search the issue tracker for issues that match a query; returns at most `limit` issues with their "
               "title, state, labels and the first 200 characters of the body. Use it before filing a new issue so "
               "that duplicates are found; the query accepts the tracker's own syntax (is:open, label:bug).")[:300]


def _home(root: Path, pin: bool = True) -> Servers:
    root.mkdir(parents=True, exist_ok=True)
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"gh": {"command": "true", "pin": pin}}}))
    config = cfg.load(root)
    assert config is not None
    server = config.servers["gh"]
    regs = RegistrationStore(root / "records.sqlite")
    [reg] = regs.ensure_many([(server.name, server.endpoint_key(), server.endpoint())])
    tools = tuple({"name": f"tool_{i:03d}", "description": DESCRIPTION,
                   "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": "Query"}}}}
                  for i in range(TOOLS))
    cat.save_cache(McpDirs(root).catalogs, cat.ServerCatalog(reg.registration_id, "gh", server.endpoint_key(),
                                                             time.time(), tools))
    return Servers(McpDirs(root), config, regs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        servers = _home(Path(tmp) / "pinned")
        unpinned = _home(Path(tmp) / "unpinned", pin=False)
        servers.sync_pins()
        path = servers.pin_store.path
        [state] = servers.by_name.values()
        print(f"pins: 1 pinned server, {TOOLS} tools")
        rows = [("os.stat (baseline)", median_us(lambda: os.stat(path), 5_000)),
                ("sync_pins (unchanged)", median_us(servers.sync_pins, 5_000)),
                ("read offered (no check)", median_us(lambda: servers.offered, 5_000))]

        def changed() -> None:
            servers._pin_stamp = None  # as if another process had committed
            servers.sync_pins()

        rows.append(("sync_pins (changed)", median_us(changed, 50)))
        rows.append(("rebuild, pinned", median_us(servers.rebuild, 50)))
        rows.append(("rebuild, not pinned", median_us(unpinned.rebuild, 50)))
        report(rows, "os.stat (baseline)")
        assert len(servers.offered) == TOOLS and state.pins is not None
        print("poisoning detector:")
        big = (DESCRIPTION + " ") * (256_000 // (len(DESCRIPTION) + 1))
        report([("scan 300 chars", median_us(lambda: scan_text(DESCRIPTION), 500)),
                ("scan 256 KiB", median_us(lambda: scan_text(big), 3, repeats=5))], "scan 300 chars")


if __name__ == "__main__":
    main()
