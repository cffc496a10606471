"""Subprocess: imports tooldeck once, then forks one worker process per request, so the kill test can
kill many real processes without paying the import each time. It holds no SQLite connection and no
thread when it forks (each worker opens the store itself).

Usage: python _kill_zygote.py HOME. Reads `SEED LOG` lines from stdin; for each, forks a worker that
runs `_kill_plan.run(HOME, LOG, SEED)`, prints the worker's pid, waits for it to end and prints its
wait status (`-9` when it was killed by SIGKILL). Ends at end of input."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _kill_plan

# What a Runtime imports when it starts (the MCP wiring alone takes about a second): once, here.
import tooldeck.records.store
import tooldeck.sources.mcp.wiring  # noqa: F401


def main() -> None:
    home = Path(sys.argv[1])
    assert threading.active_count() == 1, "fork only a process with a single thread"
    for line in sys.stdin:
        seed, log = line.split(maxsplit=1)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _kill_plan.run(home, Path(log.strip()), int(seed))
            except BaseException:
                fd = os.open(log.strip(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                _kill_plan.log_line(fd, "error", traceback.format_exc())
                code = 3
            os._exit(code)
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status), flush=True)


if __name__ == "__main__":
    main()
