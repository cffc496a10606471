"""`chat_search` and `chat_read_messages` through a real Runtime over a 10,000-message SillyTavern log
imported into the home (by the CLI, in a real process): hits, roles, windows, scan_limit, refs, line
ranges, every cap and error code, and the run's frozen input (`agent.input_history_conflict`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conversation.conftest import Call, caller, import_chat, st_log
from tooldeck.core.errors import HostFault

N = 10_000


def text(i: int) -> str:
    """Message i: every 97th mentions the dragon, every 500th the old mill (on its 2nd line), all a forest."""
    first = f"Message {i}: we walk in the forest" + (" and see a Dragon" if i % 97 == 0 else "")
    second = "near the old mill" if i % 500 == 0 else "nothing else"
    return f"{first}\n{second}\nline three of {i}"


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "Seraphina - 2024-05-04.jsonl"
    path.write_text(st_log(text(i) for i in range(N)), encoding="utf-8")
    return path


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tooldeck.cli", *args, "--home", str(home)], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def call(chat_runtime: Any, log_file: Path, tmp_path: Path) -> Call:
    done = cli(tmp_path, "chat", "import", str(log_file), "--id", "sera")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"imported {N} message(s) as chat sera (Seraphina)"
    return caller(chat_runtime({"chat": "sera"}))


def test_search_over_the_imported_log(call: Call) -> None:
    r = call("chat_search", query="dragon", limit=5)
    assert not r.is_error, r.content
    s = r.structured
    assert s["inputMessageCount"] == N and s["matched"] == len(range(0, N, 97)) and s["truncated"]
    assert [h["index"] for h in s["hits"]] == [9991, 9894, 9797, 9700, 9603]  # equal scores: newest first
    hit = s["hits"][0]
    assert hit["ref"] == "chat:current#9991" and hit["role"] == "assistant" and hit["name"] == "Seraphina"
    assert "see a Dragon" in hit["snippet"] and hit["score"] == 1
    assert r.content.splitlines()[1].startswith("#9991 [assistant Seraphina] score 1: ")


def test_phrases_exclusions_roles_and_windows(call: Call) -> None:
    s = call("chat_search", query='dragon "old mill"', limit=50).structured
    assert [h["index"] for h in s["hits"]] == [i for i in range(N - 1, -1, -1) if i % 97 == 0 and i % 500 == 0]
    s = call("chat_search", query="dragon -mill", limit=50, role="assistant", start_message=100,
             end_message=1000).structured
    assert [h["index"] for h in s["hits"]] == [i for i in range(1000, 99, -1) if i % 97 == 0 and i % 2 == 1
                                               and i % 500 != 0]
    assert s["window"] == [100, 1000]
    s = call("chat_search", query="forest", scan_limit=3, end_message=50).structured
    assert [h["index"] for h in s["hits"]] == [50, 49, 48] and s["scanned"] == 3
    s = call("chat_search", query="forest", end_message=10 * N).structured  # past the input: clipped
    assert s["window"] == [N - 10_000, N - 1] and s["matched"] == N  # the Profile's default scan_limit: 10,000


def test_scores_rank_repeated_terms_first(call: Call) -> None:
    s = call("chat_search", query="of 9", limit=3, start_message=9000, end_message=9999).structured
    assert s["hits"][0]["score"] >= s["hits"][-1]["score"]
    s = call("chat_search", query="9", start_message=9999).structured
    assert s["hits"] == [{"index": 9999, "role": "assistant", "name": "Seraphina", "score": 5,
                          "snippet": s["hits"][0]["snippet"], "ref": "chat:current#9999"}]


def test_no_hit_is_a_success(call: Call) -> None:
    r = call("chat_search", query="unicorn")
    assert not r.is_error and r.structured["hits"] == [] and r.content.startswith("No message matched `unicorn`")


@pytest.mark.parametrize(("args", "code"), [
    ({"query": "-dragon"}, "chat.invalid_query"),
    ({"query": "  "}, "chat.invalid_query"),
    ({"query": "x", "start_message": N}, "chat.invalid_message_range"),
    ({"query": "x", "start_message": 10, "end_message": 9}, "chat.invalid_message_range"),
    ({"query": "x", "scan_limit": 100_001}, "tool.invalid_arguments"),
    ({"query": "x", "limit": 51}, "tool.invalid_arguments"),
    ({"query": "x", "role": "narrator"}, "tool.invalid_arguments"),
])
def test_search_errors(call: Call, args: dict[str, Any], code: str) -> None:
    r = call("chat_search", **args)
    assert r.is_error and r.error_code == code, r.content


def test_read_whole_messages_and_line_ranges(call: Call) -> None:
    r = call("chat_read_messages", messages=[{"index": 500}, {"index": 500, "start_line": 2, "line_count": 1},
                                             {"index": 9999, "start_line": 3}])
    assert not r.is_error, r.content
    got = r.structured["messages"]
    assert [(m["ref"], m["text"]) for m in got] == [
        ("chat:current#500", text(500)), ("chat:current#500:L2-L2", "near the old mill"),
        ("chat:current#9999:L3-L3", "line three of 9999")]
    assert got[0]["role"] == "user" and got[0]["totalLines"] == 3 and got[0]["sent"] == "May 4, 2024 10:20pm"
    assert r.content.startswith("[#500 user User · L1-L3 of 3] chat:current#500\n" + text(500))


@pytest.mark.parametrize(("items", "code"), [
    ([{"index": N}], "chat.message_not_found"),
    ([{"index": 3, "line_count": 1}], "chat.invalid_message_range"),
    ([{"index": 3, "start_line": 4}], "chat.invalid_message_range"),
    ([{"index": i} for i in range(21)], "chat.read_too_large"),
    ([], "tool.invalid_arguments"),
    ([{"index": -1}], "tool.invalid_arguments"),
    ([{"index": 1, "start_line": 0}], "tool.invalid_arguments"),
])
def test_read_errors(call: Call, items: list[dict[str, Any]], code: str) -> None:
    r = call("chat_read_messages", messages=items)
    assert r.is_error and r.error_code == code, r.content


def test_read_caps(chat_runtime: Any, tmp_path: Path) -> None:
    big = "\n".join(f"{i:07d}" + "x" * 92 for i in range(100))  # 100 lines of 100 characters (+ newlines)
    import_chat(tmp_path, "big", [big, "short", big[:7_000], big[:7_000], big[:7_000]])
    call = caller(chat_runtime({"chat": "big"}))
    r = call("chat_read_messages", messages=[{"index": 0}])
    assert r.error_code == "chat.read_too_large" and "line ranges" in r.content
    r = call("chat_read_messages", messages=[{"index": 0, "start_line": 1, "line_count": 81}])
    assert r.error_code == "chat.read_too_large" and "lines 1-81" in r.content
    r = call("chat_read_messages", messages=[{"index": 0, "start_line": 1, "line_count": 79}])
    assert not r.is_error and r.structured["messages"][0]["endLine"] == 79
    r = call("chat_read_messages", messages=[{"index": 2}, {"index": 3}, {"index": 4}])  # 21,000 in all
    assert r.error_code == "chat.read_too_large" and "20,000" in r.content
    r = call("chat_read_messages", messages=[{"index": 2}, {"index": 3}, {"index": 1}])
    assert not r.is_error and len(r.structured["messages"]) == 3


def test_an_unbound_or_missing_chat(chat_runtime: Any) -> None:
    r = caller(chat_runtime({"chat": "nope"}))("chat_search", query="x")
    assert r.error_code == "chat.not_found" and "tooldeck chat import" in r.content
    r = caller(chat_runtime())("chat_read_messages", messages=[{"index": 0}])
    assert r.error_code == "chat.not_found" and "not an agent run" in r.content


def test_the_input_is_frozen_for_the_run(chat_runtime: Any, tmp_path: Path) -> None:
    import_chat(tmp_path, "c", [f"m{i} apple" for i in range(10)])
    rt = chat_runtime({"chat": "c"})
    call = caller(rt)
    assert call("chat_search", query="apple").structured["inputMessageCount"] == 10
    import_chat(tmp_path, "c", [f"m{i} apple" for i in range(15)], replace=True)  # the chat grew meanwhile
    s = call("chat_search", query="apple", limit=50).structured
    assert s["inputMessageCount"] == 10 and {h["index"] for h in s["hits"]} == set(range(10))
    assert call("chat_read_messages", messages=[{"index": 12}]).error_code == "chat.message_not_found"
    other = caller(rt, "r2")  # another run freezes its own input
    assert other("chat_search", query="apple").structured["inputMessageCount"] == 15


def test_a_shorter_chat_is_an_input_history_conflict(chat_runtime: Any, tmp_path: Path) -> None:
    import_chat(tmp_path, "c", [f"m{i}" for i in range(10)])
    rt = chat_runtime({"chat": "c"})
    assert not caller(rt)("chat_search", query="m1").is_error
    import_chat(tmp_path, "c", [f"m{i}" for i in range(4)], replace=True)
    with pytest.raises(HostFault) as caught:
        caller(rt)("chat_search", query="m1")
    assert caught.value.code == "agent.input_history_conflict" and "fewer than the 10" in caught.value.message
    rt.close()
    # the freeze is in the run's records: a new process on the home resuming the run sees the conflict too
    again = tooldeck.Runtime(tmp_path, profile=rt.profile)
    try:
        with pytest.raises(HostFault):
            caller(again)("chat_read_messages", messages=[{"index": 0}])
        assert not caller(again, "fresh")("chat_read_messages", messages=[{"index": 3}]).is_error
    finally:
        again.close()


def test_cli_import_errors_and_list(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(st_log(["hello", "hi"]), encoding="utf-8")
    assert cli(tmp_path, "chat", "import", str(log)).returncode == 0
    again = cli(tmp_path, "chat", "import", str(log))
    assert again.returncode == 2 and again.stderr.startswith("error: chat.exists: a chat 'log' was imported")
    assert cli(tmp_path, "chat", "import", str(log), "--replace").returncode == 0
    bad_id = cli(tmp_path, "chat", "import", str(log), "--id", "../x")
    assert bad_id.returncode == 2 and "chat.invalid_id" in bad_id.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"mes": "ok"}\n{"mes": 3}\n', encoding="utf-8")
    done = cli(tmp_path, "chat", "import", str(broken))
    assert done.returncode == 2 and "chat.import_invalid: line 2: `mes` is int" in done.stderr
    listed = cli(tmp_path, "chat", "list", "--json")
    assert [(c["chat_id"], c["messages"], c["title"]) for c in json.loads(listed.stdout)] == [("log", 2, "Seraphina")]


def test_a_broken_records_file_is_chat_store_failed(tmp_path: Path) -> None:
    from tooldeck.conversation.chat_store import ChatStore
    from tooldeck.core.errors import TooldeckError

    (tmp_path / "records.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(TooldeckError) as caught:
        ChatStore(tmp_path / "records.sqlite").chats(None, 10)
    assert caught.value.code == "chat.store_failed" and "records.sqlite" in caught.value.message
    log = tmp_path / "log.jsonl"
    log.write_text(st_log(["hello"]), encoding="utf-8")
    done = cli(tmp_path, "chat", "import", str(log))
    assert done.returncode == 2 and "error: chat.store_failed:" in done.stderr
