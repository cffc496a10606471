"""Start `tooldeck serve` as a real subprocess and talk to it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp import StdioServerParameters

TOOLDECK = str(Path(sys.executable).with_name("tooldeck"))
START_TIMEOUT_S = 30.0


@dataclass
class Served:
    url: str
    proc: subprocess.Popen[str]

    @property
    def base(self) -> str:
        return self.url.removesuffix("/mcp")


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TOOLDECK_TOKEN"}
    env.update(extra or {})
    return env


@contextmanager
def http_server(home: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`tooldeck serve --http 127.0.0.1:0 …` until the block ends; yields the URL it printed."""
    proc = subprocess.Popen([TOOLDECK, "serve", "--home", str(home), "--http", "127.0.0.1:0", *_eager(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(env))
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        line = ""
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                line = proc.stdout.readline()
                break
        if not line.startswith("tooldeck serving MCP on http://"):
            if proc.poll() is None:
                proc.kill()
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"tooldeck serve printed no URL (exit {proc.returncode}): {line!r}\n{err}")
        yield Served(line.split(" on ", 1)[1].split()[0], proc)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str], timeout: float = 15.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return proc.returncode


def stdio_params(home: Path, *args: str, default_loading: bool = False) -> StdioServerParameters:
    """`default_loading` keeps serve's own default (deferred); otherwise tools are served eagerly so the
    tests can call them by name."""
    argv = list(args) if default_loading else _eager(args)
    return StdioServerParameters(command=TOOLDECK, args=["serve", "--stdio", "--home", str(home), *argv],
                                 env=_env(None))


def _eager(args: tuple[str, ...]) -> list[str]:
    return list(args) if "--loading" in args else [*args, "--loading", "eager"]
