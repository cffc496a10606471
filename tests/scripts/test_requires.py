"""`requires` in tool.json and SKILL.md front matter (issue 14.5): parsed with the file, evaluated per
invocation; an invalid value is a diagnostic naming the file and the field, and the rest still loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tests.scripts.conftest import call, write_tool
from tests.scripts.test_skills import skill
from tooldeck.catalog.sources import Diagnostic
from tooldeck.sources.script_loader import ScriptSpec, parse_tool_json
from tooldeck.sources.skill_loader import Skill, parse_skill_md
from tooldeck.sources.skills import RUN_SKILL_ID

ECHO = 'import os, json\nprint(json.dumps({"echo": json.loads(os.environ["TOOLDECK_ARGS"])}))\n'


def test_tool_json_requires_env(runtime: tooldeck.Runtime, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tool(home, "gh", ECHO, requires={"env": "TOOLDECK_TEST_GH", "interactive": True})
    write_tool(home, "plain", ECHO)
    monkeypatch.delenv("TOOLDECK_TEST_GH", raising=False)
    inv = runtime.invocation()
    assert "script_plain" in inv.call_names() and "script_gh" not in inv.call_names()
    assert left_out(runtime, inv) == [("script/gh:gh", "requires env TOOLDECK_TEST_GH (not set)")]
    monkeypatch.setenv("TOOLDECK_TEST_GH", "tok")
    inv = runtime.invocation()
    assert not call(inv, "script_gh", x=1).is_error
    headless = runtime.invocation(headless=True)
    assert "script_gh" not in headless.call_names()


def test_tool_json_requires_invalid_names_file_and_field(runtime: tooldeck.Runtime, home: Path) -> None:
    folder = write_tool(home, "bad", ECHO, requires={"executable": 7})
    write_tool(home, "good", ECHO)
    inv = runtime.invocation()
    assert "script_good" in inv.call_names() and "script_bad" not in inv.call_names()
    [diag] = [d for d in inv.diagnostics if d.code == "script.definition_invalid"]
    assert str(folder / "tool.json") in diag.message and "`requires.executable`" in diag.message


def test_skill_requires_leaves_the_skill_out(runtime: tooldeck.Runtime, home: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    skill(home / "skills", "pdf", "Read PDFs.", requires="{executable: tooldeck-no-such-prog}")
    skill(home / "skills", "notes", "Take notes.")
    inv = runtime.invocation()
    described = inv.snapshot.by_name()["run_skill"].descriptor.description
    assert "- notes: Take notes." in described and "pdf" not in described
    assert left_out(runtime, inv) == [
        (f"{RUN_SKILL_ID}#pdf", "requires executable tooldeck-no-such-prog (not found on PATH)")]
    refused = call(inv, "run_skill", skill="pdf")
    assert refused.content.startswith("skill not found: pdf") and "- notes" in refused.content
    bin_dir = home.parent / "bin"
    bin_dir.mkdir()
    prog = bin_dir / "tooldeck-no-such-prog"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    inv = runtime.invocation()
    assert "- pdf: Read PDFs." in inv.snapshot.by_name()["run_skill"].descriptor.description
    assert call(inv, "run_skill", skill="pdf").content.startswith("skill: pdf")


def test_skill_requires_invalid_names_file_and_field(runtime: tooldeck.Runtime, home: Path) -> None:
    skill(home / "skills", "pdf", "Read PDFs.", requires="{interactive: maybe}")
    skill(home / "skills", "notes", "Take notes.")
    inv = runtime.invocation()
    [diag] = [d for d in inv.diagnostics if d.code == "skill.definition_invalid"]
    assert str(home / "skills" / "pdf" / "SKILL.md") in diag.message and "`requires.interactive`" in diag.message
    assert "notes" in call(inv, "run_skill", skill="notes").content


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["env", "secret", "executable", "interactive", "provider_capability", "z"]),
                        inner, max_size=4), max_leaves=10))
def test_requires_in_either_file_gives_a_spec_or_a_diagnostic(value: Any) -> None:
    doc = {"name": "t", "description": "T.", "requires": value}
    got = parse_tool_json(json.dumps(doc).encode(), "/h/tools/script/t/tool.json")
    assert isinstance(got, ScriptSpec | Diagnostic)
    if isinstance(got, Diagnostic):
        assert "/h/tools/script/t/tool.json" in got.message
    md = f"---\nname: t\ndescription: T.\nrequires: {json.dumps(value)}\n---\n"
    parsed = parse_skill_md(md.encode(), "/h/skills/t/SKILL.md", "t")
    assert isinstance(parsed, Skill | Diagnostic)


def left_out(runtime: Any, inv: Any) -> list[tuple[str, str]]:
    """What the snapshot left out, but `ask_user` (left out of every invocation without an answerer)."""
    return [(tid, why) for tid, why in runtime.snapshots.left_out(inv.snapshot) if tid != "builtin:ask_user"]

