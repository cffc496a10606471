"""Skills: SKILL.md front matter, scopes and precedence, run_skill, the deferred listing, the shell view."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.scripts.conftest import call
from tooldeck.sources.skill_loader import INVALID, Skill, parse_skill_md
from tooldeck.sources.skills import RUN_SKILL_ID
from tooldeck.workspace import for_run


def skill(root: Path, name: str, description: str, body: str = "Do it well.\n", **extra: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    fields = "".join(f"{k}: {v}\n" for k, v in extra.items())
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{fields}---\n{body}")
    return folder


def _diags(runtime: tooldeck.Runtime) -> list[str]:
    return [d.message for d in runtime.catalog.diagnostics() if d.code == INVALID]


def test_front_matter_valid_keeps_unknown_keys() -> None:
    text = ("---\nname: pdf\ndescription: >\n  Read PDF files\n  page by page.\nlicense: MIT\nmetadata:\n  author: me\n"
            "allowed-tools: workspace_shell\nx-mine: [1, 2]\n---\n# PDF\n")
    parsed = parse_skill_md(text.encode(), "/h/skills/pdf/SKILL.md", "pdf")
    assert isinstance(parsed, Skill)
    assert parsed.description == "Read PDF files page by page."
    assert parsed.front_matter["x-mine"] == [1, 2] and parsed.front_matter["metadata"] == {"author": "me"}
    assert parsed.text == text


@pytest.mark.parametrize(("text", "field"), [
    ("# no front matter\n", "(front matter)"),
    ("---\nname: pdf\ndescription: x\n", "(front matter)"),  # never closed
    ("---\nname: [pdf\ndescription: x\n---\n", "(front matter)"),  # broken YAML
    ("---\n- a list\n---\n", "(front matter)"),
    ("---\ndescription: x\n---\n", "name"),
    ("---\nname: PDF Tool\ndescription: x\n---\n", "name"),
    ("---\nname: other\ndescription: x\n---\n", "name"),
    ("---\nname: pdf\n---\n", "description"),
    ("---\nname: pdf\ndescription: x\nlicense: [1]\n---\n", "license"),
    ("---\nname: pdf\ndescription: x\nmetadata: text\n---\n", "metadata"),
])
def test_front_matter_problems_name_the_file_and_field(runtime: tooldeck.Runtime, home: Path, text: str,
                                                       field: str) -> None:
    skill(home / "skills", "good", "A good one.")
    (home / "skills" / "pdf").mkdir()
    (home / "skills" / "pdf" / "SKILL.md").write_text(text)
    inv = runtime.invocation()
    [message] = _diags(runtime)
    assert str(home / "skills" / "pdf" / "SKILL.md") in message and f"`{field}`" in message
    # the other skills still load
    assert "good" in call(inv, "run_skill", skill="good").content


def test_run_skill_known_and_unknown(runtime: tooldeck.Runtime, home: Path) -> None:
    skill(home / "skills", "pdf", "Read PDFs.", "Use pdftotext, then summarise.\n")
    skill(home / "skills", "long", "x" * 1000)
    inv = runtime.invocation()
    r = call(inv, "run_skill", skill="pdf")
    assert not r.is_error and r.tool_id == str(RUN_SKILL_ID)
    assert r.content == ("skill: pdf\nskill directory: skills/pdf\n\n---\n\n"
                         + (home / "skills" / "pdf" / "SKILL.md").read_text())
    unknown = call(inv, "run_skill", skill="docx")
    assert not unknown.is_error
    lines = unknown.content.splitlines()
    assert lines[:2] == ["skill not found: docx", "available skills:"]
    assert lines[2].startswith("- long: ") and len(lines[2]) == len("- long: ") + 512
    assert lines[3] == "- pdf: Read PDFs."
    # the directory it names is readable in the shell and by the file tools
    assert "Use pdftotext" in call(inv, "workspace_shell", command="cat skills/pdf/SKILL.md").content
    assert "Use pdftotext" in call(inv, "workspace_read_file", path="skills/pdf/SKILL.md").content


def test_run_skill_description_lists_home_skills_and_follows_changes(runtime: tooldeck.Runtime, home: Path) -> None:
    assert "run_skill" not in runtime.invocation().call_names()  # no <home>/skills: no run_skill
    folder = skill(home / "skills", "pdf", "Read PDFs.")
    first = runtime.invocation()
    described = first.snapshot.by_name()["run_skill"].descriptor.description
    assert "- pdf: Read PDFs." in described
    again = runtime.invocation()
    assert again.snapshot.id == first.snapshot.id
    (folder / "SKILL.md").write_text("---\nname: pdf\ndescription: Read and split PDFs.\n---\n")
    os.utime(folder / "SKILL.md", ns=(time.time_ns(), time.time_ns() + 10_000_000))
    changed = runtime.invocation()
    assert changed.snapshot.id != first.snapshot.id
    assert "- pdf: Read and split PDFs." in changed.snapshot.by_name()["run_skill"].descriptor.description


def test_run_scope_wins_over_home(runtime: tooldeck.Runtime, home: Path, tmp_path: Path) -> None:
    skill(home / "skills", "pdf", "Home PDF skill.", "home body\n")
    skill(home / "skills", "notes", "Home notes skill.")
    library = tmp_path / "run-skills"
    skill(library, "pdf", "Run PDF skill.", "run body\n")
    skill(library, "chart", "Run chart skill.")
    inv = runtime.invocation()
    for_run(inv.run_state).views.mount("skills", library)
    r = call(inv, "run_skill", skill="pdf")
    assert "skill directory: skills/pdf" in r.content and "run body" in r.content
    notes = call(inv, "run_skill", skill="notes")
    assert f"skill directory: {home / 'skills' / 'notes'}" in notes.content  # not in this run's skills/ view
    assert "chart" in call(inv, "run_skill", skill="chart").content
    listed = call(inv, "run_skill", skill="?").content
    assert "- pdf: Run PDF skill." in listed and "- notes: Home notes skill." in listed
    assert "run body" in call(inv, "workspace_shell", command="cat skills/pdf/SKILL.md").content


def test_workspace_skills_folder_is_the_runs_own_scope(runtime: tooldeck.Runtime, home: Path) -> None:
    skill(home / "skills", "pdf", "Home PDF skill.")
    state = runtime.run_state("r1", workspace=home / "shared-ws")
    assert for_run(state).views.base_of("skills") is not None  # no skills/ of its own yet: the home's
    ws2 = home / "ws2"
    skill(ws2 / "skills", "pdf", "Workspace PDF skill.")
    inv = runtime.invocation(run_id="r2", workspace=ws2)
    assert for_run(inv.run_state).views.base_of("skills") is None
    assert "Workspace PDF skill." in call(inv, "run_skill", skill="pdf").content


def test_deferred_turn_context_lists_skills(make_runtime: MakeRuntime, home: Path) -> None:
    skill(home / "skills", "pdf", "Read PDFs.")
    skill(home / "skills", "chart", "Draw charts.")
    deferred = make_runtime(home=home, records=False, loading="deferred").invocation()
    context = deferred.turn_context()
    assert "Skills (load one with run_skill before using it):\n- chart: Draw charts.\n- pdf: Read PDFs." in context
    eager = make_runtime(home=home, records=False).invocation()
    assert eager.turn_context() == ""
    assert "- chart: Draw charts." in eager.snapshot.by_name()["run_skill"].descriptor.description
