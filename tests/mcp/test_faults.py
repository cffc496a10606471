"""Faulty servers: crash mid-call, hang, garbage on stdout, 10 MB result, slow start, invalid schema, no server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tooldeck.runtime import Runtime

from .conftest import PYTHON, call, fixture_server, free_port, pid_gone, poll, write_mcp_json, write_toml

UNKNOWN_SENTENCE = "The MCP tool may have executed; this call will not be retried."


@pytest.fixture(scope="module")
def rt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    home = tmp_path_factory.mktemp("faults")
    write_mcp_json(home, {
        "fx": fixture_server(),
        "garbage": fixture_server("--garbage"),
        "invalid": fixture_server("--invalid-schema", "--page-size", "4"),
    })
    write_toml(home, "[mcp.servers.fx]\ncall_timeout_s = 1.0\ntools = { big = { timeout_s = 60 } }\n")
    runtime = Runtime(home, records=True)
    yield runtime
    runtime.close()


def test_crash_mid_call_is_outcome_unknown_and_the_next_call_reconnects(rt: Runtime) -> None:
    inv = rt.invocation()
    pid_before = call(inv, "mcp__fx__pid").content.split()[0]
    crashed = call(inv, "mcp__fx__crash", call_id="crash_1")
    assert crashed.is_error and crashed.error_code == "mcp.call_outcome_unknown"
    assert UNKNOWN_SENTENCE in crashed.content
    [record] = [c for c in rt.recorder.history(inv.id).calls if c.call_id == "crash_1"]  # type: ignore[attr-defined]
    assert record.status == "outcome_unknown"
    again = call(inv, "mcp__fx__pid")
    assert not again.is_error and again.content.split()[0] != pid_before  # a new server process
    assert rt.mcp is not None and rt.mcp.status()[0].state == "connected"


def test_hang_times_out_as_outcome_unknown_and_the_server_stays_usable(rt: Runtime, tmp_path: Path) -> None:
    inv = rt.invocation()
    marker = tmp_path / "cancelled"
    hung = call(inv, "mcp__fx__hang", {"marker": str(marker)}, call_id="hang_1")
    assert hung.error_code == "mcp.call_outcome_unknown" and "within 1 s" in hung.content
    assert UNKNOWN_SENTENCE in hung.content
    assert poll(marker.exists), "the server never saw the call cancelled: the tool still runs"
    [record] = [c for c in rt.recorder.history(inv.id).calls if c.call_id == "hang_1"]  # type: ignore[attr-defined]
    assert record.status == "outcome_unknown"
    assert call(inv, "mcp__fx__echo", {"message": "still here"}).content == "Echo: still here"


def test_profile_timeout_shorter_than_the_server_timeout_still_gives_the_mcp_outcome(rt: Runtime) -> None:
    inv = rt.invocation(profile={"tool_timeout_s": 0.5})
    hung = call(inv, "mcp__fx__hang")
    assert hung.error_code == "mcp.call_outcome_unknown"


def test_garbage_on_stdout_is_skipped(rt: Runtime) -> None:
    inv = rt.invocation()
    assert "mcp__garbage__echo" in inv.call_names()
    assert call(inv, "mcp__garbage__echo", {"message": "clean"}).content == "Echo: clean"


def test_ten_megabytes_are_spilled_to_a_file(rt: Runtime) -> None:
    inv = rt.invocation()
    big = call(inv, "mcp__fx__big", {"chars": 10_000_000})
    assert not big.is_error
    assert big.content.startswith("This tool result is too large to include in full (10000000 characters).")
    assert big.structured["externalized"] is True
    spilled = inv.run_state.workspace_root / big.structured["path"]
    assert spilled.stat().st_size >= 10_000_000
    assert len(big.content) < 10_000


def test_invalid_schema_is_a_diagnostic_and_the_rest_works(rt: Runtime) -> None:
    inv = rt.invocation()
    names = inv.call_names()
    assert "mcp__invalid__bad_schema" not in names
    assert "mcp__invalid__echo" in names and "mcp__invalid__add_tool" in names  # every page was read
    problems = {d.code for d in inv.diagnostics if "invalid" in d.message}
    assert {"mcp.tool_schema_invalid", "mcp.tool_definition_invalid"} <= problems
    bad = next(d for d in inv.diagnostics if d.code == "mcp.tool_schema_invalid")
    assert bad.tool_id is not None and bad.tool_id.endswith(":bad_schema")
    assert call(inv, "mcp__invalid__add", {"a": 1, "b": 2}).content == "3"


def test_slow_start_and_missing_servers(tmp_path: Path) -> None:
    port = free_port()
    pid_file = tmp_path / "too_slow.pid"
    too_slow = fixture_server("--slow-start", "5", connect_timeout_s=0.5)
    write_mcp_json(tmp_path, {
        "slow": fixture_server("--slow-start", "1.0"),
        # Through sh, which writes its pid at once and then becomes the server (exec keeps the pid).
        "too_slow": {**too_slow, "command": "/bin/sh",
                     "args": ["-c", f'echo $$ > {pid_file}; exec "$0" "$@"', PYTHON, *too_slow["args"]]},
        "missing": {"command": str(tmp_path / "no-such-server")},
        "nohttp": {"url": f"http://127.0.0.1:{port}/mcp", "connect_timeout_s": 2},
    })
    with Runtime(tmp_path) as rt:
        # Opening waited for the handshake of `too_slow` no longer than its connect timeout: the process was
        # stopped (not left to finish its 5 s start).
        assert poll(lambda: pid_file.is_file() and pid_file.read_text().strip() != "")
        assert pid_gone(int(pid_file.read_text())), "the server that timed out is still running"
        inv = rt.invocation()
        assert "mcp__slow__echo" in inv.call_names()
        assert call(inv, "mcp__slow__echo", {"message": "late"}).content == "Echo: late"
        diagnostics = {d.message.split("`")[1]: d for d in inv.diagnostics if d.code in (
            "mcp.connect_timeout", "mcp.command_not_found", "mcp.connection_refused")}
        assert set(diagnostics) == {"too_slow", "missing", "nohttp"}
        assert diagnostics["too_slow"].code == "mcp.connect_timeout"
        assert "handshake within 0.5 s" in diagnostics["too_slow"].message
        assert diagnostics["missing"].code == "mcp.command_not_found" and "not found" in diagnostics["missing"].message
        assert diagnostics["nohttp"].code == "mcp.connection_refused"
        states = {s.name: s for s in rt.mcp.status()}  # type: ignore[union-attr]
        assert states["missing"].tools_total == 0 and states["missing"].error
        reports = {r.name: r for r in rt.mcp.refresh()}  # type: ignore[union-attr]
        assert reports["slow"].ok and not reports["missing"].ok and "not found" in (reports["missing"].error or "")


def test_a_dead_server_after_discovery_gives_not_sent(tmp_path: Path) -> None:
    script = tmp_path / "once.sh"
    flag = tmp_path / "ran"
    # The first start runs the fixture; later starts fail at once (the binary "disappeared").
    script.write_text(f"#!/bin/sh\nif [ -e {flag} ]; then exit 7; fi\ntouch {flag}\n"
                      f"exec {PYTHON} {fixture_server()['args'][0]}\n")
    script.chmod(0o755)
    write_mcp_json(tmp_path, {"once": {"command": str(script)}})
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        assert call(inv, "mcp__once__crash").error_code == "mcp.call_outcome_unknown"
        gone = call(inv, "mcp__once__echo", {"message": "x"})
        assert gone.error_code == "mcp.not_sent" and gone.structured["error"]["reason"] == "connect_failed"
        assert "Nothing was run" in gone.content


def test_missing_env_var_is_not_sent_and_a_diagnostic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLDECK_TEST_UNSET", raising=False)
    write_mcp_json(tmp_path, {"needs": fixture_server("--name", "${TOOLDECK_TEST_UNSET}")})
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        [problem] = [d for d in inv.diagnostics if d.code == "mcp.config_env_missing"]
        assert "TOOLDECK_TEST_UNSET is not set" in problem.message and "args[2]" in problem.message
        monkeypatch.setenv("TOOLDECK_TEST_UNSET", "named")  # expanded at connect time: the next try works
        [report] = rt.mcp.refresh("needs")  # type: ignore[union-attr]
        assert report.ok and report.tools >= 14
