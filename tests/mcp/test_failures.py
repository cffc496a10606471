"""Each way a server can fail to start or answer, with a real failing server, gets its own stable code,
a cause that names the evidence and a next step (`sources/mcp/classify.py`).

stdio: real processes (missing, not executable, exiting with a message on stderr, speaking no MCP,
silent). HTTP: real loopback servers (`fixtures/http_faults.py`; the fixture MCP server behind the
SDK's own bearer-token middleware), a refused port, an unresolvable name, TLS to plain HTTP and a
self-signed certificate. Timeouts are checked to have stopped the work: the process is gone, the
HTTP connection is closed.
"""

from __future__ import annotations

import http.server
import json
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tooldeck.sources.mcp import Failure, McpManager, transport

from .conftest import PYTHON, fixture_server, free_port, pid_gone, write_mcp_json
from .fixtures.http_faults import FaultServer

JSONRPC_ERRORS = Path(__file__).parent / "fixtures" / "jsonrpc_errors.py"


def _refresh(home: Path, servers: dict[str, Any]) -> dict[str, Failure]:
    """Discover every server once (in parallel) and return each one's failure."""
    write_mcp_json(home, servers)
    manager = McpManager.from_home(home, start=False)
    assert manager is not None
    try:
        reports = {r.name: r for r in manager.refresh()}
    finally:
        manager.close()
    failures = {}
    for name, report in reports.items():
        assert not report.ok and report.failure is not None, f"{name} did not fail: {report}"
        failures[name] = report.failure
    return failures


def _script(directory: Path, name: str, body: str, mode: int = 0o755) -> Path:
    path = directory / name
    path.write_text(body, encoding="utf-8")
    path.chmod(mode)
    return path


# -- stdio ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stdio_failures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("stdio-failures")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    pids = base / "pids"
    pids.mkdir()
    servers = {
        "missing": {"command": str(bin_dir / "no-such-server")},
        "noexec": {"command": str(_script(bin_dir, "noexec", "#!/bin/sh\nexit 0\n", mode=0o644))},
        "noshebang": {"command": str(_script(bin_dir, "noshebang", "echo hi\n"))},
        "badinterp": {"command": str(_script(bin_dir, "badinterp", "#!/nonexistent/interpreter\n"))},
        "nocwd": {"command": PYTHON, "args": ["-c", "pass"], "cwd": str(base / "no-such-dir")},
        "exits": {"command": "/bin/sh", "args": ["-c", "echo 'loading config' >&2; "
                                                       "echo 'Error: API_KEY is not set' >&2; exit 1"]},
        "chatty": {"command": PYTHON, "args": ["-c", (
            "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
            "print('Welcome to my HTTP server on port 8000', flush=True); time.sleep(600)"),
            str(pids / "chatty")], "connect_timeout_s": 2},
        "silent": {"command": PYTHON, "args": ["-c", (
            "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
            "print('Downloading 12 packages...', file=sys.stderr, flush=True); time.sleep(600)"),
            str(pids / "silent")], "connect_timeout_s": 2},
        "rejects": {"command": PYTHON, "args": [str(JSONRPC_ERRORS), "reject"]},
        "modern": {"command": PYTHON, "args": [str(JSONRPC_ERRORS), "modern-only"]},
        "e2big": {"command": "/bin/true", "args": ["x" * 200_000]},  # one argument over the kernel's 128 KiB
    }
    return {"failures": _refresh(base / "home", servers), "pids": pids, "base": base}


def test_missing_command(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["missing"]
    assert f.code == "mcp.command_not_found" and not f.transient
    assert f.summary == f"could not start: the command was not found ({stdio_failures['base']}/bin/no-such-server)"
    assert f.advice.startswith("Install it, or set `command` to the program's full path in the entry of `missing`")


def test_command_without_execute_permission(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["noexec"]
    assert f.code == "mcp.command_not_executable"
    assert "the command is not executable" in f.summary and "chmod +x" in f.advice


def test_script_without_a_shebang_line(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["noshebang"]
    assert f.code == "mcp.command_not_executable"
    assert "is not a program this system can run" in f.summary and "`#!` line" in f.advice


def test_script_whose_interpreter_is_missing_is_not_called_a_missing_command(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["badinterp"]
    assert f.code == "mcp.command_not_found"
    assert "exists, but the interpreter named on its `#!` line was not found" in f.summary


def test_missing_working_directory(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["nocwd"]
    assert f.code == "mcp.cwd_not_found"
    assert f.summary == f"could not start: its working directory does not exist ({stdio_failures['base']}/no-such-dir)"
    assert "`cwd`" in f.advice


def test_process_exiting_at_start_quotes_its_stderr(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["exits"]
    assert f.code == "mcp.process_exited"
    assert f.summary == ('could not start: the process exited during startup (its stderr ends with: '
                         '"Error: API_KEY is not set")')
    assert f.details["stderr"] == ["loading config", "Error: API_KEY is not set"]
    assert f.advice.startswith("Run its `command` and `args` from the entry of `exits` in ")
    assert "API_KEY" not in f.advice  # the arguments (where literal tokens may be) are not quoted
    log = Path(f.details["log"])
    assert "Error: API_KEY is not set" in log.read_text() and str(log) in f.advice


def test_process_speaking_no_mcp_is_named_and_stopped(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["chatty"]
    assert f.code == "mcp.not_mcp"
    assert f.summary == ('does not speak MCP: the process wrote "Welcome to my HTTP server on port 8000" on stdout, '
                         "which is not an MCP message")
    assert "stdio mode" in f.advice and "stderr, not stdout" in f.advice
    assert pid_gone(int((stdio_failures["pids"] / "chatty").read_text()))


def test_silent_process_times_out_and_is_stopped(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["silent"]
    assert f.code == "mcp.connect_timeout" and f.transient
    assert f.summary == ('did not answer: the process started but did not complete the MCP handshake within 2 s '
                         '(its stderr ends with: "Downloading 12 packages...")')
    assert "raise `connect_timeout_s`" in f.advice
    assert pid_gone(int((stdio_failures["pids"] / "silent").read_text()))


def test_handshake_answered_with_a_json_rpc_error(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["rejects"]
    assert f.code == "mcp.handshake_failed"
    assert f.summary == "rejected the MCP handshake (JSON-RPC -32603: database is locked)"


def test_no_shared_protocol_version(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["modern"]
    assert f.code == "mcp.protocol_incompatible"
    assert f.summary == "shares no MCP protocol version with tooldeck (it offers 2099-01-01)"


def test_process_that_cannot_be_created(stdio_failures: dict[str, Any]) -> None:
    f = stdio_failures["failures"]["e2big"]
    assert f.code == "mcp.spawn_failed"
    assert f.summary == "could not start: the process could not be created (Argument list too long)"


def test_a_listing_that_never_answers(tmp_path: Path) -> None:
    [f] = _refresh(tmp_path, {"slowlist": fixture_server("--list-delay", "600", connect_timeout_s=8)}).values()
    assert f.code == "mcp.listing_failed" and f.transient
    assert f.summary == "could not list its tools: tools/list did not answer within 8 s"


def test_process_printing_a_usage_line_and_exiting_is_not_mcp(tmp_path: Path) -> None:
    """The stray line and the exit race inside the SDK; the line must win every time."""
    servers = {f"usage{i}": {"command": "/bin/sh", "args": ["-c", "echo 'usage: server [--port N]'; exit 2"]}
               for i in range(5)}
    for name, f in _refresh(tmp_path, servers).items():
        assert f.code == "mcp.not_mcp", (name, f)
        assert '"usage: server [--port N]"' in f.summary and f.summary.endswith("and then exited")


# -- HTTP -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_failures(fault_http: FaultServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Failure]:
    paths = ["/401", "/403", "/404", "/405", "/500", "/html", "/redirect"]
    servers: dict[str, Any] = {p.strip("/"): {"url": fault_http.url(p), "connect_timeout_s": 5} for p in paths}
    servers["refused"] = {"url": f"http://127.0.0.1:{free_port()}/mcp", "connect_timeout_s": 5}
    servers["dns"] = {"url": "http://no-such-host.invalid/mcp", "connect_timeout_s": 5}
    servers["plain"] = {"url": f"https://127.0.0.1:{fault_http.port}/mcp", "connect_timeout_s": 5}
    servers["close"] = {"url": fault_http.url("/close"), "connect_timeout_s": 5}
    servers["sse"] = {"url": fault_http.url("/sse-empty"), "connect_timeout_s": 5}
    return _refresh(tmp_path_factory.mktemp("http-failures"), servers)


def test_401_is_an_authorization_demand(http_failures: dict[str, Failure], fault_http: FaultServer) -> None:
    f = http_failures["401"]
    metadata = f"{fault_http.base}/.well-known/oauth-protected-resource/401"
    assert f.code == "mcp.auth_required" and not f.transient
    assert f.summary == (f"requires authorization: {fault_http.url('/401')} answered HTTP 401 (Bearer: "
                         f"error=invalid_token, Authentication required); resource metadata: {metadata}")
    assert f.details["challenge"]["params"]["error"] == "invalid_token"
    assert '`"headers": {"Authorization": "Bearer ${MCP_401_TOKEN}"}`' in f.advice
    assert f"The resource metadata at {metadata} names the authorization server" in f.advice


def test_403_is_a_refused_authorization(http_failures: dict[str, Failure]) -> None:
    f = http_failures["403"]
    assert f.code == "mcp.auth_forbidden"
    assert "answered HTTP 403 (Bearer: error=insufficient_scope, Required scope: tools:read)" in f.summary
    assert "(it needs the scope `tools:read`)" in f.advice


def test_404_is_a_wrong_url(http_failures: dict[str, Failure], fault_http: FaultServer) -> None:
    f = http_failures["404"]
    assert f.code == "mcp.http_not_found"
    assert f.summary == f"could not be reached: {fault_http.url('/404')} answered HTTP 404 Not Found"
    assert "often ending in `/mcp`" in f.advice


def test_405_says_the_url_takes_no_mcp_requests(http_failures: dict[str, Failure]) -> None:
    f = http_failures["405"]
    assert f.code == "mcp.http_error" and "HTTP 405 Method Not Allowed" in f.summary
    assert "does not accept MCP requests (POST)" in f.advice


def test_500_is_a_failing_server_worth_retrying(http_failures: dict[str, Failure]) -> None:
    f = http_failures["500"]
    assert f.code == "mcp.http_server_error" and f.transient
    assert "answered HTTP 500 Internal Server Error" in f.summary


def test_a_web_page_is_not_an_mcp_endpoint(http_failures: dict[str, Failure]) -> None:
    f = http_failures["html"]
    assert f.code == "mcp.not_mcp"
    assert "answered with text/html; charset=utf-8 instead of MCP JSON" in f.summary


def test_a_redirect_to_another_origin_names_the_location(http_failures: dict[str, Failure]) -> None:
    f = http_failures["redirect"]
    assert f.code == "mcp.http_redirect"
    assert "redirects to http://login.example.invalid/mcp (HTTP 302 Found)" in f.summary
    assert "set `url` to it" in f.advice


def test_refused_port(http_failures: dict[str, Failure]) -> None:
    f = http_failures["refused"]
    assert f.code == "mcp.connection_refused" and f.transient
    assert "nothing accepts connections at 127.0.0.1:" in f.summary and "(connection refused)" in f.summary


def test_unresolvable_host(http_failures: dict[str, Failure]) -> None:
    f = http_failures["dns"]
    assert f.code == "mcp.dns_failed"
    assert "the host name no-such-host.invalid could not be resolved" in f.summary


def test_tls_to_a_plain_http_server(http_failures: dict[str, Failure]) -> None:
    f = http_failures["plain"]
    assert f.code == "mcp.tls_failed"
    assert "the TLS handshake with 127.0.0.1:" in f.summary and "use `http://`" in f.advice


def test_a_server_hanging_up_without_an_answer(http_failures: dict[str, Failure]) -> None:
    f = http_failures["close"]
    assert f.code == "mcp.network_error" and f.transient
    assert "Server disconnected without sending a response" in f.summary


def test_an_event_stream_that_ends_without_a_response(http_failures: dict[str, Failure]) -> None:
    f = http_failures["sse"]
    assert f.code == "mcp.connection_lost"
    assert f.summary == "could not be reached: the connection closed during the MCP handshake"


def test_a_server_that_never_answers_times_out_and_the_connection_is_closed(tmp_path: Path) -> None:
    with FaultServer() as server:  # its own server: `closed` must belong to this test's connection
        [f] = _refresh(tmp_path, {"hang": {"url": server.url("/hang"), "connect_timeout_s": 1.5}}).values()
        assert f.code == "mcp.connect_timeout" and f.transient
        assert f.summary == f"did not answer: {server.url('/hang')} sent no MCP answer within 1.5 s"
        assert server.hung.is_set()
        assert server.closed.wait(15), "the timed-out request's connection was left open"


def test_a_response_body_that_never_ends_is_cut_at_the_message_limit(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "MAX_MESSAGE_BYTES", 1 << 20)
    with FaultServer() as server:  # its own server: `closed` and `huge_sent` must belong to this test
        [f] = _refresh(tmp_path, {"huge": {"url": server.url("/huge")}}).values()
        assert f.code == "mcp.message_too_large" and not f.transient
        assert f.summary == ("answered with a message of more than 1048576 bytes, so tooldeck stopped reading it and "
                             "closed the connection")
        assert server.closed.wait(15), "the connection was left open"
        sent = server.huge_sent
        time.sleep(0.3)
        assert server.huge_sent == sent < 64 << 20  # nothing more was read, and far less than the body


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate (made by `openssl`); yields (url, cert)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed; no self-signed certificate can be made")
    base = tmp_path_factory.mktemp("tls")
    cert, key = base / "cert.pem", base / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(404)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.handle_error = lambda *a: None  # type: ignore[method-assign]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}/mcp", cert
    httpd.shutdown()
    httpd.server_close()


def test_an_untrusted_certificate_and_the_advised_fix(self_signed: tuple[str, Path], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    url, cert = self_signed
    [f] = _refresh(tmp_path / "a", {"selfsigned": {"url": url, "connect_timeout_s": 5}}).values()
    assert f.code == "mcp.tls_failed"
    assert f.summary == "could not be reached: its TLS certificate was not accepted (self-signed certificate)"
    assert "SSL_CERT_FILE" in f.advice
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # what the advice says: now TLS passes and HTTP answers
    [f] = _refresh(tmp_path / "b", {"selfsigned": {"url": url, "connect_timeout_s": 5}}).values()
    assert f.code == "mcp.http_not_found"


# -- the SDK's own bearer-token middleware ----------------------------------------------------------


def test_sdk_auth_no_token_wrong_token_weak_token_then_the_right_one(auth_fixture: tuple[str, Path], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    url, _flag = auth_fixture
    metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    failures = _refresh(tmp_path / "a", {
        "none": {"url": url},
        "wrong": {"url": url, "headers": {"Authorization": "Bearer nope"}},
        "weak": {"url": url, "headers": {"Authorization": "Bearer weak"}},
    })
    assert failures["none"].code == "mcp.auth_required"
    assert failures["none"].details["resource_metadata"] == metadata
    assert "error=invalid_token, Authentication required" in failures["none"].summary
    assert failures["none"].advice.startswith("Sign in with `tooldeck mcp login none`")
    assert failures["wrong"].code == "mcp.auth_required"
    assert failures["wrong"].advice.startswith("The server rejected the `Authorization` header configured in")
    assert failures["weak"].code == "mcp.auth_forbidden"
    assert "error=insufficient_scope, Required scope: tools" in failures["weak"].summary

    # The advised fix: the token from a variable. The failure record is then removed.
    home = tmp_path / "b"
    write_mcp_json(home, {"remote": {"url": url, "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}})
    monkeypatch.setenv("REMOTE_TOKEN", "nope")
    manager = McpManager.from_home(home, start=False)
    assert manager is not None
    try:
        [report] = manager.refresh("remote")
        assert report.failure is not None and report.failure.code == "mcp.auth_required"
        [record] = list((home / "mcp" / "failures").iterdir())
        assert json.loads(record.read_text())["failure"]["code"] == "mcp.auth_required"
        monkeypatch.setenv("REMOTE_TOKEN", "s3cret")
        manager.close()
        manager = McpManager.from_home(home, start=False)
        assert manager is not None
        assert manager.status()[0].failure is not None  # known from disk before anything is tried
        [report] = manager.refresh("remote")
        assert report.ok and report.failure is None and report.tools >= 14
        assert not record.exists()
        assert manager.status()[0].error is None
    finally:
        manager.close()
