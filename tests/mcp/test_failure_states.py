"""What a model and a host learn from a server's state: the unknown-tool message for its call names
(never tried, still starting, failed, paused, tool off, deferred `run_tool`), the cause inside
`mcp.not_sent`, a token revoked in the middle of a session, the failure record on disk, and the
`tooldeck.mcp` log (once per change)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from tooldeck.naming import mcp_model_name
from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import McpManager, load

from .conftest import PYTHON, call, fixture_server, write_mcp_json, write_toml


def test_never_tried_server_explains_its_names(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"time": {"command": "uvx", "args": ["mcp-server-time"]}})
    manager = McpManager(tmp_path, load(tmp_path), start=False)  # type: ignore[arg-type]
    with Runtime(tmp_path, sources=[manager]) as rt:
        result = call(rt.invocation(), "mcp__time__get_current_time")
    assert result.error_code == "tool.unknown_tool"
    assert result.content.startswith("`mcp__time__get_current_time` is not available: MCP server `time` has not "
                                     "been connected yet, so its tools are unknown. Nothing was run. The user can "
                                     "run `tooldeck mcp refresh time`")


def test_still_starting_server_says_so(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"slow": fixture_server("--slow-start", "8")})
    write_toml(tmp_path, "[mcp]\nstartup_wait_s = 0\n")
    with Runtime(tmp_path) as rt:
        result = call(rt.invocation(), "mcp__slow__echo", {"message": "hi"})
        assert result.content.startswith("`mcp__slow__echo` is not available: MCP server `slow` is still starting, "
                                          "so its tools are not known yet.")
        diagnostics = [d for d in rt.invocation().diagnostics if d.code == "mcp.server_not_discovered"]
        assert diagnostics and "is still starting" in diagnostics[0].message


def test_paused_server_and_tool_turned_off(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"fx": fixture_server(), "held": {**fixture_server(), "disabled": True}})
    write_toml(tmp_path, "[mcp.servers.fx]\ntools = { pid = 'off' }\n")
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        paused = call(inv, "mcp__held__echo", {"message": "x"})
        assert paused.content.startswith("`mcp__held__echo` is not available: MCP server `held` is paused by the "
                                         "user; its tools cannot be called.")
        off = call(inv, "mcp__fx__pid")
        assert off.content.startswith("`mcp__fx__pid` is not available: the user turned this tool off")
        typo = call(inv, "mcp__fx__ecko", {"message": "x"})  # the server works: an ordinary unknown name
        assert typo.content.startswith("`mcp__fx__ecko` is not an available tool; nothing was run. Did you mean "
                                       "`mcp__fx__echo`?")


def test_deferred_run_tool_explains_a_failed_server(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"gone": {"command": str(tmp_path / "gone-server")}})
    with Runtime(tmp_path) as rt:
        inv = rt.invocation(profile={"loading": "deferred"})
        result = call(inv, "run_tool", {"name": "mcp__gone__search", "args": {}})
    assert result.error_code == "tool.unknown_tool"
    assert result.content.startswith("`mcp__gone__search` is not available: MCP server `gone` could not start: "
                                     "the command was not found")
    assert result.content.endswith("Look up available tools with find_tools.")


def test_a_long_server_name_is_matched_through_its_shortened_call_names(tmp_path: Path) -> None:
    name = "a-very-long-server-name-for-the-search-backend"
    write_mcp_json(tmp_path, {name: {"command": str(tmp_path / "missing")}})
    real = mcp_model_name(name, "query_documents_by_semantic_similarity")  # what the model would have seen
    assert len(real) == 64 and not real.startswith(f"mcp__{name}__")
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        for shortened in (real, "mcp__a-very-long-server-nam__x", "MCP__A_VERY_LONG_SERVER_NAME__x"):
            result = call(inv, shortened)
            assert result.content.startswith(f"`{shortened}` is not available: MCP server `{name}` could not start")
        other = call(inv, "mcp__a-very-long__x")  # too short a prefix to be this server's
        assert other.content.startswith("`mcp__a-very-long__x` is not an available tool")


def test_a_cached_server_that_stops_starting_gives_not_sent_with_the_cause(tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    script = tmp_path / "once.sh"
    script.write_text(f"#!/bin/sh\nif [ -e {flag} ]; then echo 'fatal: license expired' >&2; exit 3; fi\n"
                      f"touch {flag}\nexec {PYTHON} {fixture_server()['args'][0]}\n")
    script.chmod(0o755)
    write_mcp_json(tmp_path, {"once": {"command": str(script)}})
    with Runtime(tmp_path) as rt:
        inv = rt.invocation()
        assert call(inv, "mcp__once__crash").error_code == "mcp.call_outcome_unknown"
        result = call(inv, "mcp__once__echo", {"message": "x"})
    assert result.error_code == "mcp.not_sent"
    error = result.structured["error"]
    assert error["reason"] == "connect_failed" and error["cause"]["code"] == "mcp.process_exited"
    assert ('No request was sent to MCP server `once` for `echo`: the server could not start: the process exited '
            'during startup (its stderr ends with: "fatal: license expired"). Nothing was run.') in result.content
    assert error["cause"]["details"]["stderr"][-1] == "fatal: license expired"


def test_a_token_revoked_mid_session_refuses_the_call(auth_fixture: tuple[str, Path], tmp_path: Path) -> None:
    url, revoked = auth_fixture
    write_mcp_json(tmp_path, {"remote": {"url": url, "headers": {"Authorization": "Bearer s3cret"}}})
    try:
        with Runtime(tmp_path) as rt:
            inv = rt.invocation()
            assert call(inv, "mcp__remote__echo", {"message": "before"}).content == "Echo: before"
            revoked.touch()
            result = call(inv, "mcp__remote__echo", {"message": "after"})
            assert result.error_code == "mcp.auth_required"
            assert result.content.startswith("MCP server `remote` refused the call to `echo`: it requires "
                                             f"authorization: {url} answered HTTP 401")
            assert "The tool did not run." in result.content
            [status] = rt.mcp.status()  # type: ignore[union-attr]
            assert status.failure is not None and status.failure.code == "mcp.auth_required"
    finally:
        revoked.unlink(missing_ok=True)


def test_each_failure_is_logged_once_per_change_and_the_recovery_too(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("FIXTURE_NAME", raising=False)
    write_mcp_json(tmp_path, {"fx": fixture_server("--name", "${FIXTURE_NAME}")})
    manager = McpManager.from_home(tmp_path, start=False)
    assert manager is not None
    caplog.set_level(logging.INFO, logger="tooldeck.mcp")
    try:
        manager.refresh("fx")
        manager.refresh("fx")
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert warnings[0].startswith("MCP server `fx` could not start: ") and "FIXTURE_NAME" in warnings[0]
        assert "[mcp.config_env_missing]" in warnings[0]
        monkeypatch.setenv("FIXTURE_NAME", "named")
        [report] = manager.refresh("fx")
        assert report.ok
        infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        assert any(m.startswith("MCP server `fx` works again: ") for m in infos)
    finally:
        manager.close()


def test_failure_records_of_another_endpoint_or_unreadable_ones_are_ignored(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"gone": {"command": str(tmp_path / "missing")}})
    manager = McpManager.from_home(tmp_path, start=False)
    assert manager is not None
    try:
        [report] = manager.refresh("gone")
        assert report.failure is not None
    finally:
        manager.close()
    [record] = list((tmp_path / "mcp" / "failures").iterdir())
    data = json.loads(record.read_text())
    data["endpoint_key"] = "0" * 64
    record.write_text(json.dumps(data))
    assert _listed_failure(tmp_path) is None
    record.write_text("{not json")
    assert _listed_failure(tmp_path) is None


def _listed_failure(home: Path) -> object:
    manager = McpManager.from_home(home, start=False)
    assert manager is not None
    try:
        [status] = manager.status()
        assert status.state == "not discovered"
        return status.failure
    finally:
        manager.close()


def test_the_failure_time_is_when_it_happened(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"gone": {"command": str(tmp_path / "missing")}})
    before = time.time()
    manager = McpManager.from_home(tmp_path, start=False)
    assert manager is not None
    try:
        [report] = manager.refresh("gone")
    finally:
        manager.close()
    assert report.failure is not None and before <= report.failure.at <= time.time()
