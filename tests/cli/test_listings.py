"""Every list command prints the same way (`cli/table.show_rows`): a table with a header for a person, a
line saying there is nothing (and how to get something), or the same rows as a JSON array with `--json`
(`[]` when empty). Real commands on a real home."""

from __future__ import annotations

import json
from pathlib import Path

from .support import tooldeck


def _chat_log(path: Path, title: str, n: int) -> Path:
    lines = [json.dumps({"user_name": "User", "character_name": title})]
    lines += [json.dumps({"name": "User", "is_user": i % 2 == 0, "mes": f"message {i}"}) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_chat_list_is_a_table_an_empty_line_or_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    empty = tooldeck("chat", "list", "--home", str(home), cwd=tmp_path)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout == f"no imported chats in {home}; add one with `tooldeck chat import FILE`\n"
    assert json.loads(tooldeck("chat", "list", "--json", "--home", str(home), cwd=tmp_path).stdout) == []
    for name, n in (("first", 2), ("second", 3)):
        done = tooldeck("chat", "import", str(_chat_log(tmp_path / f"{name}.jsonl", name.title(), n)), "--home",
                        str(home), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    table = tooldeck("chat", "list", "--home", str(home), cwd=tmp_path).stdout.splitlines()
    assert table[0].split() == ["CHAT", "MESSAGES", "IMPORTED", "(UTC)", "TITLE"]
    assert [(line.split()[0], line.split()[1], line.split()[-1]) for line in table[1:]] == [
        ("second", "3", "Second"), ("first", "2", "First")]
    listed = json.loads(tooldeck("chat", "list", "--json", "--home", str(home), cwd=tmp_path).stdout)
    assert [(c["chat_id"], c["messages"], c["title"]) for c in listed] == [("second", 3, "Second"),
                                                                          ("first", 2, "First")]


def test_empty_lists_say_so_and_json_says_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for args, line in ((("approvals", "list"), "no remembered approvals (--all shows the revoked ones too)"),
                       (("schedules", "list"), "no schedules (--all shows the fired one-shots too)"),
                       (("records", "list"), f"no invocations in {home / 'records.sqlite'}")):
        shown = tooldeck(*args, "--home", str(home), cwd=tmp_path)
        assert (shown.returncode, shown.stdout) == (0, line + "\n"), (args, shown.stderr)
        as_json = tooldeck(*args, "--json", "--home", str(home), cwd=tmp_path)
        assert (as_json.returncode, json.loads(as_json.stdout)) == (0, []), args
