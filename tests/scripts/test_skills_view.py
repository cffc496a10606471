"""The read-only `skills/` view: visible in the shell (also when the host serves it from an outside folder),
written by no tool."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tooldeck
from tests.scripts.conftest import call, write_tool
from tooldeck.workspace import for_run


@pytest.fixture
def library(tmp_path: Path) -> Path:
    lib = tmp_path / "library"
    (lib / "pdf").mkdir(parents=True)
    (lib / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: Read PDFs.\n---\nUse pdftotext.\n")
    return lib


def _mounted(runtime: tooldeck.Runtime, library: Path) -> tooldeck.Invocation:
    inv = runtime.invocation()
    for_run(inv.run_state).views.mount("skills", library)
    return inv


def test_cat_skill_in_the_shell_when_skills_is_mounted(runtime: tooldeck.Runtime, library: Path) -> None:
    inv = _mounted(runtime, library)
    r = call(inv, "workspace_shell", command="cat skills/pdf/SKILL.md")
    assert not r.is_error, r.content
    assert "Use pdftotext." in r.content
    assert "pdf" in call(inv, "workspace_shell", command="ls /skills").content
    assert "Use pdftotext." in call(inv, "workspace_shell", command="cat SKILL.md", workdir="skills/pdf").content


def test_background_command_sees_the_mounted_skills(runtime: tooldeck.Runtime, library: Path) -> None:
    inv = _mounted(runtime, library)
    started = call(inv, "background_command", command="cat /skills/pdf/SKILL.md")
    assert not started.is_error, started.content
    out = inv.run_state.workspace_root / started.structured["output_path"]
    deadline = time.monotonic() + 30
    while "Use pdftotext." not in (out.read_text() if out.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Use pdftotext." in out.read_text()


@pytest.mark.parametrize("mounted", [True, False])
def test_no_tool_writes_into_skills(runtime: tooldeck.Runtime, library: Path, home: Path, mounted: bool) -> None:
    inv = runtime.invocation()
    if mounted:
        for_run(inv.run_state).views.mount("skills", library)
        skill = library / "pdf" / "SKILL.md"
    else:
        skill = inv.run_state.workspace_root / "skills" / "pdf" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text((library / "pdf" / "SKILL.md").read_text())
    before = skill.read_text()
    for command in ("echo x > skills/pdf/SKILL.md", "echo x >> /skills/pdf/SKILL.md", "rm -f skills/pdf/SKILL.md",
                    "mkdir skills/new", "touch skills/pdf/other.md", "mv skills/pdf skills/moved",
                    "python3 -c \"open('/skills/pdf/SKILL.md', 'w').write('x')\"",
                    "node -e \"require\" 2>/dev/null; true"):
        call(inv, "workspace_shell", command=command)
    write_tool(home, "writer", "echo x > /skills/pdf/SKILL.md; echo y > /skills/pdf/new.md\n", "script.sh")
    assert call(runtime.invocation(run_id=inv.run_state.run_id), "script_writer").is_error
    for name, args in (("workspace_write_file", {"path": "skills/pdf/SKILL.md", "content": "x"}),
                       ("workspace_apply_patch", {"path": "skills/pdf/SKILL.md", "old_string": "Use",
                                                  "new_string": "x"}),
                       ("workspace_remove_file", {"path": "skills/pdf/SKILL.md"})):
        assert call(inv, name, **args).is_error
    assert skill.read_text() == before
    assert sorted(p.name for p in skill.parent.iterdir()) == ["SKILL.md"]
    assert sorted(p.name for p in skill.parent.parent.iterdir()) == ["pdf"]
