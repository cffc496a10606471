"""A connection whose stream ends by itself (not closed by tooldeck) lets its server process go at once.

Before, the connection's holder waited for tooldeck to close it: a stdio server whose stdin could no longer be
written (the write failed, the read side ended a second later) kept running, with its pipes, until the next call
connected again or the Runtime closed.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from tooldeck.runtime import Runtime

from .conftest import call, pid_gone, write_mcp_json

_SERVER = """
import json, os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))

def reply(message_id, **answer):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, **answer}) + "\\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if method == "initialize":
        reply(message_id, result={"protocolVersion": message["params"]["protocolVersion"],
                                  "capabilities": {"tools": {}}, "serverInfo": {"name": "stalls", "version": "1"}})
    elif method == "tools/list":
        reply(message_id, result={"tools": [{"name": "stall", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call":
        os.close(0)  # reads no more: the client's next write fails; stdout stays open
        time.sleep(120)
    elif message_id is not None:
        reply(message_id, error={"code": -32601, "message": "Method not found"})
"""


def test_a_server_whose_stdin_broke_is_stopped_without_waiting_for_the_next_call(tmp_path: Path) -> None:
    script = tmp_path / "stalls.py"
    script.write_text(textwrap.dedent(_SERVER))
    pid_file = tmp_path / "pid"
    write_mcp_json(tmp_path, {"s": {"command": sys.executable, "args": [str(script), str(pid_file)],
                                    "call_timeout_s": 1}})
    with Runtime(tmp_path, records=False) as rt:
        result = call(rt.invocation(), "mcp__s__stall")
        assert result.is_error  # timed out: its cancel is the write that fails
        pid = int(pid_file.read_text())
        assert pid_gone(pid, timeout=20), "the server outlived its connection"
