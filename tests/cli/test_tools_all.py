"""`tooldeck tools --all` (issue 14.5): the tools a scene or an availability condition left out, with why."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.support import tooldeck


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for name, requires in (("gh", {"env": "TOOLDECK_CLI_TEST_UNSET"}), ("plain", None),
                           ("chat_only", {"interactive": True})):
        folder = home / "tools" / "script" / name
        folder.mkdir(parents=True)
        doc = {"name": name, "description": f"The {name} tool.", **({"requires": requires} if requires else {})}
        (folder / "tool.json").write_text(json.dumps(doc))
        (folder / "script.sh").write_text("cat\n")
    return home


def test_tools_all_lists_the_left_out_with_the_reason(tmp_path: Path) -> None:
    home = _home(tmp_path)
    plain = tooldeck("tools", "--home", str(home), cwd=tmp_path, columns=200)
    assert plain.returncode == 0, plain.stderr
    assert "script_plain" in plain.stdout and "script_gh" not in plain.stdout
    assert "allowed tools left out (scene or conditions); --all shows which and why." in plain.stdout

    listed = tooldeck("tools", "--all", "--headless", "--home", str(home), cwd=tmp_path, columns=200)
    assert listed.returncode == 0, listed.stderr
    left = listed.stdout.split("Left out (", 1)[1]
    assert "script/gh:gh" in left and "requires env TOOLDECK_CLI_TEST_UNSET (not set)" in left
    assert "script/chat_only:chat_only" in left and "requires an interactive origin" in left
    assert "script/plain:plain" not in left

    as_json = tooldeck("tools", "--all", "--json", "--home", str(home), cwd=tmp_path)
    doc = json.loads(as_json.stdout)
    assert {"tool_id": "script/gh:gh", "reason": "requires env TOOLDECK_CLI_TEST_UNSET (not set)"} in doc["left_out"]
    assert not any(d["tool_id"] == "script/chat_only:chat_only" for d in doc["left_out"])  # interactive here
    assert "left_out" not in json.loads(tooldeck("tools", "--json", "--home", str(home), cwd=tmp_path).stdout)
