"""Fixtures for the shell tests: a real Runtime, a planted workspace, host sentinels, a loopback listener."""

from __future__ import annotations

import http.server
import itertools
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

import tooldeck
from tooldeck.catalog.profile import Profile
from tooldeck.core.results import AgentToolResult

SHORT_TIMEOUT_S = 1.5
_ids = itertools.count()


class _Listener(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"listener-reached")

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def listener() -> Iterator[tuple[int, list[str]]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Listener)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], _Listener.hits
    server.shutdown()


@pytest.fixture(scope="session")
def env_secret() -> Iterator[str]:
    value = f"hostenv-{uuid.uuid4().hex}"
    os.environ["TOOLDECK_TEST_SECRET"] = value
    yield value
    os.environ.pop("TOOLDECK_TEST_SECRET", None)


@dataclass
class Shell:
    """A run in a real Runtime, with a workspace planted with files and hostile symlinks."""

    runtime: tooldeck.Runtime
    home: Path
    outside: Path
    secret: str
    run_id: str
    invocation: Any = None
    results: list[AgentToolResult] = field(default_factory=list)

    @property
    def ws(self) -> Path:
        return self.home / "workspaces" / self.run_id

    def call(self, command: str, workdir: str | None = None, name: str = "workspace_shell",
             **extra: Any) -> AgentToolResult:
        args: dict[str, Any] = {"command": command, **extra}
        if workdir is not None:
            args["workdir"] = workdir
        result = self.invocation.run([{"id": f"call_{next(_ids)}", "name": name, "arguments": args}])[0]
        self.results.append(result)
        return result

    def tool(self, name: str, **args: Any) -> AgentToolResult:
        result = self.invocation.run([{"id": f"call_{next(_ids)}", "name": name, "arguments": args}])[0]
        self.results.append(result)
        return result


def make_shell(tmp_path: Path, timeout_s: float = SHORT_TIMEOUT_S, **profile: Any) -> Shell:
    home = tmp_path / "home"
    outside = tmp_path / "outside"
    outside.mkdir(parents=True)
    secret = f"hostfile-{uuid.uuid4().hex}"
    (outside / "secret.txt").write_text(secret + "\n")
    (outside / "sentinel.txt").write_text("untouched\n")
    runtime = tooldeck.Runtime(home=home, profile=Profile(shell_timeout_s=timeout_s, **profile))
    shell = Shell(runtime, home, outside, secret, f"run{next(_ids)}")
    shell.invocation = runtime.invocation(run_id=shell.run_id)
    ws = shell.ws
    for root in ("output", "scratch", "tool-results", "skills", "input"):
        (ws / root).mkdir(parents=True, exist_ok=True)
    (ws / "input" / "secret.txt").write_text(secret + "-input\n")
    (ws / "tool-results" / "keep.txt").write_text("spilled result\n")
    (ws / "skills" / "keep.md").write_text("# a skill\n")
    (ws / "output" / "hello.txt").write_text("hello world\n")
    return shell


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    sh = make_shell(tmp_path)
    yield sh
    sh.runtime.close()
