"""The script source of a home is built only once `<home>/tools` or `<home>/skills` exists, and a
folder created after the Runtime is still picked up at the next invocation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tooldeck


def test_a_home_without_tools_or_skills_never_imports_the_script_modules(tmp_path: Path) -> None:
    code = ("import sys, tooldeck\n"
            f"rt = tooldeck.Runtime({str(tmp_path / 'home')!r}, records=False)\n"
            "inv = rt.invocation(profile={'loading': 'eager'})\n"
            "print(inv.run([{'id': 'c1', 'name': 'dice_roll', 'arguments': {'formula': '1d1'}}])[0].content)\n"
            "print(sorted(m for m in sys.modules if m.startswith('tooldeck.sources.s') or 'authoring' in m))\n"
            "rt.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["Rolled 1d1: 1.", "[]"], out


def test_a_tools_folder_created_later_is_picked_up(tmp_path: Path) -> None:
    rt = tooldeck.Runtime(tmp_path / "home", records=False)
    try:
        assert "script_hello" not in rt.invocation(profile={"loading": "eager"}).call_names()
        folder = tmp_path / "home" / "tools" / "script" / "hello"
        folder.mkdir(parents=True)
        (folder / "tool.json").write_text(json.dumps({"name": "hello", "description": "Say hello."}))
        (folder / "script.sh").write_text("echo hello\n")
        inv = rt.invocation(profile={"loading": "eager"})
        assert "script_hello" in inv.call_names()
        result = inv.run([{"id": "c1", "name": "script_hello", "arguments": {}}])[0]
        assert result.error_code is None and "hello" in result.content, result.content
    finally:
        rt.close()
