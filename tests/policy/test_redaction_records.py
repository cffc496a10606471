"""Secret redaction end to end (issue 19 item 6): a secret a configuration names, showing up in an MCP
result, a shell output and an extension result, is in none of the bytes tooldeck writes: the records
SQLite file and its -wal while the store is open, the file after it closed, and the spilled result
files; the model gets a marker that names it; the records count it (`result_redacted`).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest

import tooldeck
from tooldeck.core.results import AgentToolResult
from tooldeck.records.writer import REDACTED_EVENT

ENV_SERVER = Path(__file__).parent / "fixtures" / "env_server.py"
SMALL = 2_000
"""`result_inline_limit` of these tests: the padded calls spill to `tool-results/`."""


def _files_holding(root: Path, secret: str, skip: Iterable[Path] = ()) -> list[Path]:
    needle = secret.encode()
    skipped = [p.resolve() for p in skip]
    return [p for p in root.rglob("*") if p.is_file() and not any(p.resolve().is_relative_to(s) for s in skipped)
            and needle in p.read_bytes()]


def _check_written(rt: tooldeck.Runtime, secret: str, spilled: AgentToolResult, workspace: Path,
                   skip: Iterable[Path] = ()) -> None:
    home = rt.home
    wal = home / "records.sqlite-wal"
    assert wal.is_file() and wal.stat().st_size > 0, "the store is open in WAL mode: its -wal holds the turns"
    assert b"[redacted: " in (home / "records.sqlite-wal").read_bytes() + (home / "records.sqlite").read_bytes()
    assert spilled.structured["externalized"] is True
    text_file = workspace / spilled.structured["path"]
    audit_file = workspace / spilled.structured["audit_path"]
    assert "[redacted: " in text_file.read_text()
    assert secret.encode() not in text_file.read_bytes() + audit_file.read_bytes()
    assert _files_holding(home, secret, skip) == []
    rt.close()
    assert _files_holding(home, secret, skip) == []


def _events(rt: tooldeck.Runtime, inv: Any) -> list[dict[str, Any]]:
    return [e.data for e in rt.recorder.events(inv.id) if e.kind == REDACTED_EVENT]


def _call(inv: Any, name: str, args: dict[str, Any]) -> AgentToolResult:
    [result] = inv.run([{"id": f"call_{uuid.uuid4().hex[:8]}", "name": name, "arguments": args}])
    return result


def test_an_mcp_server_echoing_its_configured_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = f"mcp-token-{uuid.uuid4().hex}"
    monkeypatch.setenv("REDACT_MCP_TOKEN", token)
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"envs": {
        "command": sys.executable, "args": [str(ENV_SERVER)], "env": {"SERVICE_TOKEN": "${REDACT_MCP_TOKEN}"}}}}))
    rt = tooldeck.Runtime(home, profile={"result_inline_limit": SMALL})
    inv = rt.invocation()
    [name] = [n for n, tid in inv.call_names().items() if tid.endswith(":show_env")]

    small = _call(inv, name, {"name": "SERVICE_TOKEN"})
    assert small.error_code is None, small.content
    assert "SERVICE_TOKEN=[redacted: REDACT_MCP_TOKEN]" in small.content
    assert token not in small.content
    assert small.structured["value"] == "[redacted: REDACT_MCP_TOKEN]"
    assert small.structured["header"] == "Bearer [redacted: REDACT_MCP_TOKEN]"
    spilled = _call(inv, name, {"name": "SERVICE_TOKEN", "pad": 400})
    assert token not in spilled.content
    assert [(e["call_id"], e["labels"]["REDACT_MCP_TOKEN"] >= 1) for e in _events(rt, inv)] == [
        (small.call_id, True), (spilled.call_id, True)]
    calls = rt.recorder.history(inv.id).calls
    assert [c.call_id for c in calls] == [small.call_id, spilled.call_id]
    raw = json.dumps([c.result.raw_result for c in calls if c.result is not None])
    assert "[redacted: REDACT_MCP_TOKEN]" in raw and token not in raw
    _check_written(rt, token, spilled, inv.run_state.workspace_root)


def test_a_shell_printing_a_value_of_the_configs_environment(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The key a `[models]` entry takes from the environment, found by the shell in a workspace file."""
    key = f"shell-key-{uuid.uuid4().hex}"
    monkeypatch.setenv("REDACT_SHELL_KEY", key)
    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text('[models.main]\nprovider = "openai"\nmodel = "gpt-4.1-mini"\n'
                                        'api_key = "${REDACT_SHELL_KEY}"\n')
    rt = tooldeck.Runtime(home, profile={"result_inline_limit": SMALL, "shell_timeout_s": 30})
    inv = rt.invocation(run_id="run_shell")
    scratch = inv.run_state.workspace_root / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "app.env").write_text(f"API_KEY={key}\n")  # planted by the test: the one file allowed to hold it

    small = _call(inv, "workspace_shell", {"command": "cat scratch/app.env"})
    assert "API_KEY=[redacted: REDACT_SHELL_KEY]" in small.content, small.content
    assert key not in small.content
    spilled = _call(inv, "workspace_shell", {"command": "cat scratch/app.env; seq 1 1000; cat scratch/app.env"})
    assert key not in spilled.content
    assert [e["labels"] for e in _events(rt, inv)] == [{"REDACT_SHELL_KEY": 1}, {"REDACT_SHELL_KEY": 2}]
    _check_written(rt, key, spilled, inv.run_state.workspace_root, skip=[scratch])


def test_an_extension_result_holding_a_stored_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`${secret:NAME}` in the config: the stored value, in an extension's text and structured result."""
    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "file")
    monkeypatch.setenv("TOOLDECK_SECRETS_DIR", str(tmp_path / "secrets"))
    from tooldeck.secrets.store import SecretStore

    secret = f"stored-{uuid.uuid4().hex}"
    SecretStore().set("REDACT_EXT_SECRET", secret)
    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text('[models.main]\nprovider = "anthropic"\nmodel = "claude"\n'
                                        'api_key = "${secret:REDACT_EXT_SECRET}"\n')
    rt = tooldeck.Runtime(home, profile={"result_inline_limit": SMALL})

    @rt.tool("ext")
    def credentials(pad: int = 0) -> dict[str, Any]:
        return {"user": "ada", "token": secret, "lines": [f"line {i} {secret}" for i in range(pad)]}

    inv = rt.invocation()
    small = _call(inv, "credentials", {})
    assert small.structured == {"user": "ada", "token": "[redacted: REDACT_EXT_SECRET]", "lines": []}
    assert secret not in small.content
    spilled = _call(inv, "credentials", {"pad": 100})
    assert secret not in spilled.content
    assert [e["count"] for e in _events(rt, inv)] == [1, 101]
    _check_written(rt, secret, spilled, inv.run_state.workspace_root)


def test_records_off_and_profile_switches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-call lane (records off) redacts too; `redact = false` and `redact_ignore` leave the value."""
    value = f"switch-{uuid.uuid4().hex}"
    monkeypatch.setenv("REDACT_SWITCH", value)
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"off": {
        "command": "definitely-not-a-command", "env": {"T": "${REDACT_SWITCH}", "H": "${HOME}"}}}}))
    rt = tooldeck.Runtime(home, records=False)

    @rt.tool("ext")
    def show() -> str:
        return f"{value} at {Path.home()}"

    on = _call(rt.invocation(), "show", {})
    assert on.content == f"[redacted: REDACT_SWITCH] at {Path.home()}"  # HOME is a host variable, never a secret
    assert on.redaction is not None and on.redaction.counts == {"REDACT_SWITCH": 1}
    off = _call(rt.invocation(profile={"redact": False}), "show", {})
    assert off.content == f"{value} at {Path.home()}" and off.redaction is None
    ignored = _call(rt.invocation(profile={"redact_ignore": ["REDACT_SWITCH"]}), "show", {})
    assert ignored.content == f"{value} at {Path.home()}"
    rt.close()


async def test_the_gateway_serves_the_redacted_result_not_the_servers_blocks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tooldeck serve` relays a proxied tool's own blocks; one holding a secret goes out redacted instead."""
    from tests.server.support import serve_client

    token = f"served-{uuid.uuid4().hex}"
    monkeypatch.setenv("REDACT_SERVE_TOKEN", token)
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"envs": {
        "command": sys.executable, "args": [str(ENV_SERVER)], "env": {"SERVICE_TOKEN": "${REDACT_SERVE_TOKEN}"}}}}))
    async with serve_client(home, "stdio") as client:
        names: list[str] = []
        for _ in range(150):
            names = [t.name for t in (await client.list_tools()).tools if t.name.endswith("show_env")]
            if names:
                break
            await anyio.sleep(0.2)
        result = await client.call_tool(names[0], {"name": "SERVICE_TOKEN"})
        clean = await client.call_tool(names[0], {"name": "NOT_SET_ANYWHERE"})
    sent = result.model_dump_json()
    assert token not in sent
    assert "[redacted: REDACT_SERVE_TOKEN]" in sent
    assert clean.structured_content == {"name": "NOT_SET_ANYWHERE", "value": "", "header": "Bearer "}  # relayed
    assert _files_holding(home, token) == []
