"""Configuration: tooldeck.toml [mcp] and mcp.json (Claude Desktop format), merging, ${VAR}, errors."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.errors import McpConfigError

from .conftest import write_mcp_json, write_toml


def test_no_files_means_no_config(tmp_path: Path) -> None:
    assert cfg.load(tmp_path) is None
    write_toml(tmp_path, "[profile]\nloading = 'eager'\n")
    assert cfg.load(tmp_path) is None


def test_claude_desktop_mcp_json(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "autoApprove": ["x"]},
        "remote": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
        "off": {"command": "srv", "disabled": True},
    })
    config = cfg.load(tmp_path)
    assert config is not None
    time_, remote, off = config.servers["time"], config.servers["remote"], config.servers["off"]
    assert time_.transport == "stdio" and time_.args == ["mcp-server-time"] and time_.env == {"TZ": "UTC"}
    assert remote.transport == "http" and remote.headers == {"X-Key": "k"}
    assert off.paused
    assert config.permission_for(time_, "anything") == "allow"
    assert time_.call_timeout_s == 60 and time_.connect_timeout_s == 30


def test_toml_servers_permissions_timeouts(tmp_path: Path) -> None:
    write_toml(tmp_path, """
[mcp]
connect = "start"
default_permission = "ask"

[mcp.servers.files]
command = "node"
args = ["server.js", "${ROOT:-/srv}"]
cwd = "/tmp"
default_permission = "off"
call_timeout_s = 5

[mcp.servers.files.tools]
read = "allow"
write = { permission = "ask", timeout_s = 1.5 }

[mcp.servers.web]
url = "https://example.invalid/mcp"
paused = true
""")
    config = cfg.load(tmp_path)
    assert config is not None and config.connect == "start"
    files, web = config.servers["files"], config.servers["web"]
    assert config.permission_for(files, "read") == "allow"
    assert config.permission_for(files, "write") == "ask"
    assert config.permission_for(files, "delete") == "off"
    assert config.permission_for(web, "fetch") == "ask"
    assert files.call_timeout_for("write") == 1.5 and files.call_timeout_for("read") == 5
    assert web.paused
    endpoint = cfg.resolve_endpoint(files, {})
    assert endpoint.args == ["server.js", "/srv"] and endpoint.cwd == "/tmp"
    relative = cfg.ServerConfig(name="r", command="c", cwd="${SUB:-work}/dir")
    assert cfg.resolve_endpoint(relative, {}, base_dir=tmp_path).cwd == str(tmp_path / "work" / "dir")


def test_toml_overrides_json_entry_key_by_key(tmp_path: Path) -> None:
    write_mcp_json(tmp_path, {"time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                                       "tools": {"get_current_time": "ask"}}})
    write_toml(tmp_path, "[mcp.servers.time]\ndefault_permission = 'off'\n"
                         "tools = { convert_time = 'allow' }\n")
    config = cfg.load(tmp_path)
    assert config is not None
    time_ = config.servers["time"]
    assert time_.command == "mcp-server-time"
    assert config.permission_for(time_, "get_current_time") == "ask"
    assert config.permission_for(time_, "convert_time") == "allow"
    assert config.permission_for(time_, "other") == "off"
    assert "mcp.json" in time_.source and "tooldeck.toml" in time_.source


def test_var_expansion_in_args_env_headers() -> None:
    stdio = cfg.ServerConfig(name="s", command="c", args=["--token=${TOKEN}", "$HOME", "${MISSING:-dflt}"],
                             env={"A": "x${TOKEN}y"})
    ep = cfg.resolve_endpoint(stdio, {"TOKEN": "t0k"})
    assert ep.args == ["--token=t0k", "$HOME", "dflt"] and ep.env == {"A": "xt0ky"}
    http = cfg.ServerConfig(name="h", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer ${TOKEN}"})
    assert cfg.resolve_endpoint(http, {"TOKEN": "abc"}).headers == {"Authorization": "Bearer abc"}
    with pytest.raises(McpConfigError) as err:
        cfg.resolve_endpoint(http, {})
    assert err.value.code == "mcp.config_env_missing" and "TOKEN" in err.value.message
    assert "headers.Authorization" in err.value.message


def test_endpoint_identity_ignores_env_and_expansion() -> None:
    a = cfg.ServerConfig(name="s", command="c", args=["${X}"], env={"A": "1"})
    b = cfg.ServerConfig(name="s", command="c", args=["${X}"], env={"A": "2"}, call_timeout_s=3)
    c = cfg.ServerConfig(name="s", command="c", args=["other"])
    assert a.endpoint_key() == b.endpoint_key() != c.endpoint_key()


@settings(derandomize=True, max_examples=300, deadline=None)
@given(url=st.text(max_size=40) | st.text(max_size=30).map(lambda t: "http://" + t))
def test_any_url_is_accepted_only_if_it_can_be_connected_to(url: str) -> None:
    """Whatever the text, `url_problem` answers (never raises); an accepted URL has a scheme, a host and
    a port the MCP SDK's HTTP client (httpx2) takes."""
    problem = cfg.url_problem(url)
    if problem is None:
        parsed = httpx2.URL(url)
        assert parsed.scheme in ("http", "https") and parsed.host


@pytest.mark.parametrize(("files", "code", "needle"), [
    ({"mcp.json": "{not json"}, "mcp.config_unparsable", "line 1"),
    ({"mcp.json": json.dumps({"mcpServers": []})}, "mcp.config_invalid", "mcpServers"),
    ({"mcp.json": json.dumps({"mcpServers": {"x": {"args": []}}})}, "mcp.config_endpoint_missing", "mcpServers.x"),
    ({"mcp.json": json.dumps({"mcpServers": {"x": {"command": "c", "url": "http://a/"}}})},
     "mcp.config_endpoint_conflict", "mcpServers.x"),
    ({"mcp.json": json.dumps({"mcpServers": {"x": {"command": "c", "args": "notalist"}}})},
     "mcp.config_invalid", "mcpServers.x.args"),
    ({"mcp.json": json.dumps({"mcpServers": {"x": {"type": "websocket", "url": "http://a/ws"}}})},
     "mcp.config_invalid", "or sse (the 2024-11-05 HTTP+SSE transport)"),
    ({"tooldeck.toml": "[mcp.servers.x]\ncommand = 'c'\ncomand = 'typo'\n"}, "mcp.config_invalid",
     "mcp.servers.x.comand"),
    ({"tooldeck.toml": "[mcp.servers.x]\ncommand = 'c'\ndefault_permission = 'maybe'\n"}, "mcp.config_invalid",
     "mcp.servers.x.default_permission"),
    ({"tooldeck.toml": "[mcp]\nconnect = 'sometimes'\n"}, "mcp.config_invalid", "mcp.connect"),
    ({"tooldeck.toml": "[mcp\n"}, "mcp.config_unparsable", "tooldeck.toml"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'ftp://a'\n"}, "mcp.config_invalid", "mcp.servers.x.url"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'http://'\n"}, "mcp.config_invalid", "has no host"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'http://:8080/mcp'\n"}, "mcp.config_invalid", "has no host"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'http://a b/mcp'\n"}, "mcp.config_invalid", "whitespace"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'http://a:99999/mcp'\n"}, "mcp.config_invalid", "not a valid URL"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'http://[::1/mcp'\n"}, "mcp.config_invalid", "not a valid URL"),
    ({"tooldeck.toml": "[mcp.servers.x]\nurl = 'http://a:0/mcp'\n"}, "mcp.config_invalid", "port 0"),
    ({"mcp.json": json.dumps({"mcpServers": {"x": {"url": "https://a/\u0000"}}})}, "mcp.config_invalid",
     "control character"),
])
def test_bad_config_names_file_and_key(tmp_path: Path, files: dict[str, str], code: str, needle: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(McpConfigError) as err:
        cfg.load(tmp_path)
    assert err.value.code == code
    assert needle in err.value.message
    assert str(tmp_path) in err.value.message
