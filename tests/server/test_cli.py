"""`tooldeck serve` as a command: usage errors, the printed URL, Ctrl-C, stdin EOF."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from click.testing import Result
from typer.testing import CliRunner

from tests.server.support import TOOLDECK, http_server, stop
from tooldeck.cli.app import app


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLDECK, "serve", *args], capture_output=True, text=True, timeout=60, input=stdin)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["serve", *args])


@pytest.mark.parametrize("value", ["nonsense:port", "127.0.0.1:99999", "::1:80", "[::1", "[::1]x", ""])
def test_bad_http_address_is_a_usage_error(tmp_path: Path, value: str) -> None:
    r = invoke("--home", str(tmp_path), "--http", value)
    assert r.exit_code == 2
    assert "serve.http_address_invalid" in r.stderr


@pytest.mark.parametrize("args", [["--stdio", "--http", "127.0.0.1:0"], ["--scene", "lobby"],
                                  ["--stdio", "--token", "x"], ["--log-level", "loud"]])
def test_conflicting_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    r = invoke("--home", str(tmp_path), *args)
    assert r.exit_code == 2
    assert r.stderr.startswith("error: ")


def test_a_bad_profile_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text('{"max_calls_per_invocation": 0}')
    r = invoke("--home", str(tmp_path), "--profile", str(bad))
    assert r.exit_code == 2
    assert "profile.invalid" in r.stderr


def test_a_taken_port_is_reported(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        r = invoke("--home", str(tmp_path), "--http", f"127.0.0.1:{taken.getsockname()[1]}")
    assert r.exit_code == 1
    assert "serve.http_bind_failed" in r.stderr


def test_http_prints_url_keeps_running_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    with http_server(tmp_path / "home") as served:
        assert served.url.startswith("http://127.0.0.1:") and served.url.endswith("/mcp")
        time.sleep(0.5)
        assert served.proc.poll() is None
        assert httpx.get(served.base + "/nowhere", timeout=10).status_code == 404
        assert stop(served.proc) == 0


def test_stdio_exits_when_stdin_closes(tmp_path: Path) -> None:
    r = run("--home", str(tmp_path), "--stdio", stdin="")
    assert r.returncode == 0
    assert r.stdout == ""  # stdout is the protocol channel: nothing else is written there
    assert "tooldeck serving MCP on stdio" in r.stderr


def test_connect_flag_is_checked(tmp_path: Path) -> None:
    import subprocess

    from tests.server.support import TOOLDECK

    proc = subprocess.run([TOOLDECK, "serve", "--home", str(tmp_path), "--connect", "eager"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--connect must be lazy or start" in proc.stderr


def test_an_unknown_or_bad_serve_key_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "tooldeck.toml").write_text("[serve]\nmax_session = 3\nheader_timeout = 0\n")
    r = invoke("--home", str(tmp_path))
    assert r.exit_code == 2 and "serve.config_invalid" in r.stderr
    assert "`serve.max_session`: unknown key" in r.stderr and "max_sessions" in r.stderr
    assert "`serve.header_timeout`" in r.stderr


def test_a_bad_stdio_bound_is_a_usage_error_too(tmp_path: Path) -> None:
    (tmp_path / "tooldeck.toml").write_text("[serve]\nmax_line_bytes = 1\n")
    r = invoke("--home", str(tmp_path), "--stdio")
    assert r.exit_code == 2 and "`serve.max_line_bytes`" in r.stderr


@pytest.mark.parametrize("value", ["short", "Original", ""])
def test_a_bad_names_mode_is_a_usage_error(tmp_path: Path, value: str) -> None:
    r = invoke("--home", str(tmp_path), "--stdio", "--names", value)
    assert r.exit_code == 2 and "serve.names_invalid" in r.stderr and "prefixed or original" in r.stderr


def test_a_bad_names_key_in_tooldeck_toml_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "tooldeck.toml").write_text('[mcp]\nnames = "short"\n')
    r = invoke("--home", str(tmp_path), "--stdio")
    assert r.exit_code == 2 and "mcp.config_invalid" in r.stderr and "`mcp.names`" in r.stderr
