"""`list_chatbot` / `send_to_chatbot` through a real Runtime against loopback mocks of the Telegram Bot API
and Discord REST (their request and answer shapes): offered only with a platform enabled and its token in
the secrets store, authorised targets only, confirmation by default, parts per platform limits, every
error code, a 429 waited out once, the token never in an answer or the records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.builtins.chat_format import units
from tooldeck.secrets import SecretStore

TG_TOKEN = "123456:AAH-telegram-token-never-shown"
DC_TOKEN = "discord.token.never-shown.0099"
TOOLS = ["builtin:list_chatbot", "builtin:send_to_chatbot"]


class Sequenced(dict[str, Any]):
    """Answers per path; a list answers its items in turn (the last one from then on)."""

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        if isinstance(value, list):
            return value.pop(0) if len(value) > 1 else value[0]
        return value


@pytest.fixture
def server() -> Any:
    with loopback_server() as s:
        s.answers = Sequenced()
        yield s


def _ok(result: Any) -> Answer:
    return Answer(200, json.dumps({"ok": True, "result": result}).encode(), {"content-type": "application/json"})


def _home(tmp_path: Path, server: LoopbackServer, *, telegram: bool = True, discord: bool = True,
          store_tokens: bool = True) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "tooldeck.toml").write_text(
        f"[chatbots.telegram]\nenabled = {str(telegram).lower()}\napi_url = \"{server.url}\"\n"
        "targets = [{ id = \"1001\", name = \"me\" }, { id = \"-100777\", name = \"team\" }]\n"
        f"[chatbots.discord]\nenabled = {str(discord).lower()}\napi_url = \"{server.url}/api/v10\"\n"
        "targets = [{ id = \"555\", name = \"alerts\" }]\n")
    if store_tokens:
        SecretStore().set("TELEGRAM_BOT_TOKEN", TG_TOKEN)
        SecretStore().set("DISCORD_BOT_TOKEN", DC_TOKEN)
    return home


def _run(make_runtime: MakeRuntime, home: Path, name: str, args: dict[str, Any], **keys: Any) -> Any:
    keys.setdefault("net_allow", ["127.0.0.1"])
    keys.setdefault("permissions", {"builtin:send_to_chatbot": "allow"})
    rt = make_runtime(home=home, loading="eager", allow=TOOLS, **keys)
    [result] = rt.invocation().run([{"id": "c1", "name": name, "arguments": args}])
    assert TG_TOKEN not in result.content and DC_TOKEN not in result.content
    return result


def _tool_names(make_runtime: MakeRuntime, home: Path) -> list[str]:
    rt = make_runtime(home=home, loading="eager", allow=TOOLS)
    return [t["function"]["name"] for t in rt.invocation().tools()]


def test_offered_only_with_an_enabled_platform_and_its_token(make_runtime: MakeRuntime, tmp_path: Path,
                                                             server: LoopbackServer) -> None:
    (tmp_path / "home").mkdir()
    assert _tool_names(make_runtime, tmp_path / "home") == []
    home = _home(tmp_path, server, store_tokens=False)
    assert _tool_names(make_runtime, home) == []  # enabled, but no token in the store
    SecretStore().set("DISCORD_BOT_TOKEN", DC_TOKEN)
    assert _tool_names(make_runtime, home) == ["list_chatbot", "send_to_chatbot"]
    result = _run(make_runtime, home, "list_chatbot", {"platform": "telegram"})
    assert result.error_code == "chatbot.not_configured" and "TELEGRAM_BOT_TOKEN" in result.content
    _home(tmp_path, server, telegram=False, discord=False)
    assert _tool_names(make_runtime, home) == []


def test_list_shows_the_authorised_conversations(make_runtime: MakeRuntime, tmp_path: Path,
                                                 server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    server.answers[f"/bot{TG_TOKEN}/getChat"] = [
        _ok({"id": 1001, "type": "private", "first_name": "Ada", "last_name": "L"}),
        Answer(400, b'{"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}')]
    answer = json.loads(_run(make_runtime, home, "list_chatbot", {"platform": "telegram"}).content)
    assert answer == {"platform": "telegram", "targets": [
        {"id": "1001", "name": "me", "title": "Ada L", "type": "private"},
        {"id": "-100777", "name": "team", "error": "Telegram said 400: Bad Request: chat not found"}]}
    assert [json.loads(r.body) for r in server.requests] == [{"chat_id": "1001"}, {"chat_id": "-100777"}]
    server.answers["/api/v10/channels/555"] = Answer(200, b'{"id": "555", "name": "alerts", "type": 0}')
    answer = json.loads(_run(make_runtime, home, "list_chatbot", {"platform": "discord"}).content)
    assert answer["targets"] == [{"id": "555", "name": "alerts", "title": "alerts", "type": 0}]
    assert server.requests[-1].method == "GET" and server.requests[-1].headers["authorization"] == f"Bot {DC_TOKEN}"


def test_telegram_gets_its_html_in_parts(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    server.answers[f"/bot{TG_TOKEN}/sendMessage"] = _ok({"message_id": 42})
    message = "<h2>Status</h2><p>All <b>green</b> & fine <span>ok</span><script>x()</script></p>" + "word " * 1500
    result = _run(make_runtime, home, "send_to_chatbot", {"platform": "telegram", "target_id": "1001",
                                                          "message": message})
    assert not result.is_error, result.content
    answer = json.loads(result.content)
    assert answer == {"ok": True, "platform": "telegram", "target_id": "1001", "parts": 2,
                      "message_ids": ["42", "42"]}
    sent = [json.loads(r.body) for r in server.requests]
    assert [(s["chat_id"], s["parse_mode"]) for s in sent] == [("1001", "HTML")] * 2
    assert sent[0]["text"].startswith("<b>Status</b>\nAll <b>green</b> &amp; fine ok\n\nword")
    assert all(units(s["text"]) <= 4096 for s in sent)
    assert "".join(s["text"] for s in sent).count("word") == 1500


def test_discord_gets_markdown_without_pings(make_runtime: MakeRuntime, tmp_path: Path,
                                            server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    server.answers["/api/v10/channels/555/messages"] = Answer(200, b'{"id": "9001", "channel_id": "555"}')
    message = "**Deploy** done @everyone\n```py\n" + "print(1)\n" * 300 + "```"
    result = _run(make_runtime, home, "send_to_chatbot", {"platform": "discord", "target_id": "555",
                                                          "message": message})
    assert json.loads(result.content)["parts"] == 2
    bodies = [json.loads(r.body) for r in server.requests]
    assert all(b["allowed_mentions"] == {"parse": []} and len(b["content"]) <= 2000 for b in bodies)
    assert bodies[0]["content"].endswith("```") and bodies[1]["content"].startswith("```py\n")
    assert server.requests[0].headers["authorization"] == f"Bot {DC_TOKEN}"


def test_sending_asks_first_by_default(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    result = _run(make_runtime, home, "send_to_chatbot", {"platform": "telegram", "target_id": "1001",
                                                          "message": "hi"}, permissions={})
    assert result.error_code == "tool.permission_denied" and server.requests == []


def test_every_error_code(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer) -> None:
    home = _home(tmp_path, server, discord=False)
    send = {"platform": "telegram", "target_id": "1001", "message": "hi"}
    result = _run(make_runtime, home, "send_to_chatbot", {**send, "target_id": "2002"})
    assert result.error_code == "chatbot.unknown_target" and "1001, -100777" in result.content
    result = _run(make_runtime, home, "send_to_chatbot", {**send, "message": "<script>only()</script>"})
    assert result.error_code == "chatbot.empty_message"
    result = _run(make_runtime, home, "send_to_chatbot", {**send, "platform": "discord"})
    assert result.error_code == "chatbot.not_configured" and "enabled: telegram" in result.content
    assert server.requests == []
    server.answers[f"/bot{TG_TOKEN}/sendMessage"] = [
        _ok({"message_id": 1}),
        Answer(403, b'{"ok": false, "error_code": 403, "description": "Forbidden: bot was blocked by the user"}')]
    result = _run(make_runtime, home, "send_to_chatbot", {**send, "message": "x " * 3000})
    assert result.error_code == "chatbot.send_failed"
    assert result.content.endswith("part 2 of 2 was not sent: Telegram said 403: Forbidden: bot was blocked by the "
                                   "user; parts 1-1 of 2 were delivered.")
    result = _run(make_runtime, home, "send_to_chatbot", send, net_allow=[])
    assert result.error_code == "net.refused"
    records = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert TG_TOKEN.encode() not in records


def test_a_short_rate_limit_is_waited_out_once(make_runtime: MakeRuntime, tmp_path: Path,
                                               server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    limited = Answer(429, b'{"message": "You are being rate limited.", "retry_after": 0.2, "global": false}')
    server.answers["/api/v10/channels/555/messages"] = [limited, Answer(200, b'{"id": "1"}')]
    send = {"platform": "discord", "target_id": "555", "message": "hello"}
    assert not _run(make_runtime, home, "send_to_chatbot", send).is_error
    assert len(server.requests) == 2
    server.answers["/api/v10/channels/555/messages"] = [limited]
    result = _run(make_runtime, home, "send_to_chatbot", send)
    assert result.error_code == "chatbot.send_failed" and "rate limited" in result.content
    assert len(server.requests) == 4  # one retry per part, no more


def test_a_bad_table_leaves_the_tools_out_with_a_diagnostic(make_runtime: MakeRuntime, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text("[chatbots.slack]\nenabled = true\n")
    rt = make_runtime(home=home, loading="eager", allow=TOOLS)
    inv = rt.invocation()
    assert inv.tools() == [] or list(inv.tools()) == []
    [diag, *_] = [d for d in inv.diagnostics if d.code == "tool.condition_failed"]
    assert "chatbots.slack: unknown platform" in diag.message
