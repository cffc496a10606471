"""`--json` output has the shapes docs/cli.md documents (issue 13.7): every example there is checked,
key by key, against the real command's output."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .support import ROOT, tooldeck, write_fixture_mcp

DOC = ROOT / "docs" / "cli.md"
DICE = '{"formula": "2d6+1"}'


def documented() -> dict[str, Any]:
    """`### \\`tooldeck …\\`` heading -> the JSON example under it."""
    text = DOC.read_text(encoding="utf-8")
    found = {m.group(1): json.loads(m.group(2))
             for m in re.finditer(r"^### `tooldeck ([^`]+)`\n.*?```json\n(.*?)```", text, re.S | re.M)}
    assert len(found) >= 7, found.keys()
    return found


def keys_differ(doc: Any, real: Any, where: str = "$") -> list[str]:
    """Where the documented example and the real output disagree on keys (values are examples)."""
    if isinstance(doc, dict) and isinstance(real, dict):
        problems = [] if set(doc) == set(real) else [f"{where}: documented {sorted(doc)}, real {sorted(real)}"]
        for key in set(doc) & set(real):
            if key not in ("parameters", "structured", "arguments", "tools_array"):  # a tool's or provider's own
                problems += keys_differ(doc[key], real[key], f"{where}.{key}")
        return problems
    if isinstance(doc, list) and isinstance(real, list):
        return keys_differ(doc[0], real[0], f"{where}[0]") if doc and real else []
    if doc is None or real is None or type(doc) is type(real) or {type(doc), type(real)} <= {int, float}:
        return []  # values are examples; a null where the real run has a value (or the reverse) is fine
    return [f"{where}: documented {doc!r}, real {real!r}"]


def test_the_comparison_sees_a_renamed_key() -> None:
    assert keys_differ({"a": {"b": 1}}, {"a": {"c": 1}}) == ["$.a: documented ['b'], real ['c']"]
    assert keys_differ([{"x": "s"}], [{"x": 3}]) == ["$[0].x: documented 's', real 3"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("json") / "home"
    assert tooldeck("call", "dice_roll", DICE, "--home", str(home), cwd=home.parent).returncode == 0
    write_fixture_mcp(home)
    return home


def _run(command: str, home: Path) -> Any:
    words = command.split()
    if "INVOCATION_ID" in words:
        listed = tooldeck("records", "list", "--json", "--home", str(home), cwd=home.parent)
        words[words.index("INVOCATION_ID")] = json.loads(listed.stdout)[-1]["invocation_id"]
    if words[:2] == ["call", "NAME"]:
        words = ["call", "dice_roll", DICE]
    words = ["fx" if w == "SERVER" else w for w in words]
    proc = tooldeck(*words, "--home", str(home), cwd=home.parent)
    assert proc.returncode == 0, (command, proc.stderr)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("command", sorted(documented()))
def test_the_documented_shape_is_the_real_one(command: str, home: Path) -> None:
    real = _run(command, home)
    assert keys_differ(documented()[command], real) == []


def test_records_list_json_is_every_summary_newest_first(home: Path) -> None:
    assert tooldeck("call", "dice_roll", "[1,", "--home", str(home), cwd=home.parent).returncode == 0
    rows = _run("records list --json", home)
    assert len(rows) >= 2 and rows[0]["created_at"] >= rows[1]["created_at"]
    assert rows[0]["errors"] == 1 and rows[0]["calls"] == 1
    shown = _run(f"records show {rows[0]['invocation_id']} --json", home)
    assert shown["invocation"] == rows[0]
    [call] = shown["calls"]
    assert call["raw_arguments"] == "[1," and call["result"]["error_code"] == "tool.invalid_arguments"
