"""The authoring loop driven the way a model would: edit_tool → test_tool → the next turn calls script_<name>;
edit_skill; run_script; permission `ask` by default; every write versioned, removals trashed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.scripts.conftest import call

WEATHER_JSON = {"name": "weather", "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
WEATHER_PY = ('import os, json\nargs = json.loads(os.environ["TOOLDECK_ARGS"])\n'
              'print(json.dumps({"city": args["city"], "sky": "clear"}))\n')


@pytest.fixture
def asked() -> list[Any]:
    return []


@pytest.fixture
def rt(make_runtime: MakeRuntime, home: Path, asked: list[Any]) -> tooldeck.Runtime:
    (home / "tools").mkdir()

    def approve(request: Any) -> bool:
        asked.append(request)
        return True

    return make_runtime(home=home, records=False, confirm=approve)


def ok(inv: tooldeck.Invocation, name: str, /, **args: Any) -> str:
    r = call(inv, name, **args)
    assert not r.is_error, (r.error_code, r.content)
    return r.content


def test_the_authoring_loop(rt: tooldeck.Runtime, home: Path, asked: list[Any]) -> None:
    inv = rt.invocation()
    assert {"edit_tool", "test_tool", "edit_skill", "run_script"} <= set(inv.call_names())
    assert "script_weather" not in inv.call_names()
    ok(inv, "edit_tool", name="weather", tag="json", content=json.dumps(WEATHER_JSON))
    ok(inv, "edit_tool", name="weather", tag="script", content=WEATHER_PY.replace("clear", "grey"))
    assert json.loads(ok(inv, "test_tool", name="weather", input='{"city": "Oslo"}')) == {"city": "Oslo", "sky": "grey"}
    ok(inv, "edit_tool", name="weather", tag="script", old_string="grey", new_string="clear")  # mode inferred
    assert "script_weather" not in inv.call_names()  # this invocation's snapshot is frozen
    nxt = rt.invocation()
    r = call(nxt, "script_weather", city="Paris")
    assert not r.is_error and r.structured == {"city": "Paris", "sky": "clear"}
    assert call(nxt, "script_weather").error_code == "tool.invalid_arguments"  # tool.json's schema applies
    # every write was confirmed, and the old versions are kept
    assert len(asked) >= 4
    history = sorted(p.name for p in (home / "tools" / ".history" / "script" / "weather").iterdir())
    assert len(history) == 1 and history[0].endswith("-script.py")
    assert "grey" in (home / "tools" / ".history" / "script" / "weather" / history[0]).read_text()
    ok(nxt, "edit_tool", name="weather", mode="remove")
    assert not (home / "tools" / "script" / "weather").exists()
    assert [p.name.startswith("weather-") for p in (home / "tools" / "script" / ".Trash").iterdir()] == [True]
    assert "script_weather" not in rt.invocation().call_names()


def test_edit_tool_refuses_what_would_not_load(rt: tooldeck.Runtime, home: Path) -> None:
    inv = rt.invocation()
    bad = call(inv, "edit_tool", name="w", tag="json", content='{"name": "w"}')
    assert bad.error_code == "script.edit_invalid" and "`description`" in bad.content
    other = call(inv, "edit_tool", name="w", tag="json", content=json.dumps({**WEATHER_JSON, "name": "x"}))
    assert other.error_code == "script.edit_invalid"
    assert not (home / "tools" / "script" / "w").exists()
    assert call(inv, "edit_tool", name="nope", tag="json", old_string="a", new_string="b").error_code \
        == "script.tool_not_found"
    assert call(inv, "edit_tool", name="nope", mode="remove").error_code == "script.tool_not_found"
    assert call(inv, "edit_tool", name="../x", tag="json", content="{}").error_code == "script.edit_invalid"
    assert call(inv, "edit_tool", name="w", tag="api", content="{}").error_code == "tool.invalid_arguments"
    ok(inv, "edit_tool", name="w", tag="json", content=json.dumps({**WEATHER_JSON, "name": "w"}))
    same = call(inv, "edit_tool", name="w", tag="json", old_string='"w"', new_string='"w"')
    assert same.error_code == "script.edit_noop"
    assert call(inv, "test_tool", name="w").content.startswith("script not found: ")


def test_test_tool_reports_script_errors(rt: tooldeck.Runtime) -> None:
    inv = rt.invocation()
    ok(inv, "edit_tool", name="bad", tag="json", content=json.dumps({**WEATHER_JSON, "name": "bad"}))
    ok(inv, "edit_tool", name="bad", tag="script", content='raise KeyError("city")\n')
    r = call(inv, "test_tool", name="bad", input="{}")
    assert r.is_error and r.error_code == "script.failed" and r.content.startswith("script error: ")
    assert call(inv, "test_tool", name="bad", input="{not json").error_code == "script.edit_invalid"


def test_authoring_asks_by_default(make_runtime: MakeRuntime, home: Path) -> None:
    (home / "tools").mkdir()
    rt = make_runtime(home=home, records=False)  # no confirmation callback: `ask` is refused
    inv = rt.invocation()
    r = call(inv, "edit_tool", name="w", tag="json", content=json.dumps({**WEATHER_JSON, "name": "w"}))
    assert r.error_code == "tool.permission_denied"
    assert not (home / "tools" / "script" / "w").exists()
    allowed = make_runtime(home=home, records=False, permissions={"script/.authoring:*": "allow"})
    ok(allowed.invocation(), "edit_tool", name="w", tag="json", content=json.dumps({**WEATHER_JSON, "name": "w"}))


def test_no_authoring_tools_without_a_tools_folder(make_runtime: MakeRuntime, home: Path) -> None:
    rt = make_runtime(home=home, records=False)
    assert "edit_tool" not in rt.invocation().call_names()
    (home / "tools").mkdir()
    assert "edit_tool" in rt.invocation().call_names()


def test_edit_skill(rt: tooldeck.Runtime, home: Path) -> None:
    inv = rt.invocation()
    text = "---\nname: pdf\ndescription: Read PDFs.\n---\nUse pdftotext.\n"
    ok(inv, "edit_skill", path="pdf/SKILL.md", content=text)
    ok(inv, "edit_skill", path="pdf/scripts/x.js", content="console.log(1)\n")
    bad = call(inv, "edit_skill", path="pdf/SKILL.md", content="no front matter\n")
    assert bad.error_code == "skill.edit_invalid" and "`(front matter)`" in bad.content
    assert (home / "skills" / "pdf" / "SKILL.md").read_text() == text
    for path in ("../x.md", "/etc/x", "pdf/../../x", ".hidden/SKILL.md", "PDF Tool/SKILL.md"):
        assert call(inv, "edit_skill", path=path, content="x").error_code == "skill.edit_invalid", path
    ok(inv, "edit_skill", path="pdf/SKILL.md", old_string="pdftotext", new_string="pdftotext -layout")
    nxt = rt.invocation()
    assert "pdftotext -layout" in ok(nxt, "run_skill", skill="pdf")
    assert len(list((home / "skills" / ".history" / "pdf").iterdir())) == 1
    ok(nxt, "edit_skill", name="pdf")
    assert not (home / "skills" / "pdf").exists() and (home / "skills" / ".Trash").is_dir()
    assert call(nxt, "edit_skill", name="pdf", mode="remove").error_code == "skill.not_found"


def test_run_script(rt: tooldeck.Runtime) -> None:
    inv = rt.invocation()
    ws = inv.run_state.workspace_root
    (ws / "scratch").mkdir(parents=True, exist_ok=True)
    (ws / "scratch" / "probe.sh").write_text('args=$(cat)\necho "got $args"\necho done > /scratch/out.txt\n')
    assert ok(inv, "run_script", path="scratch/probe.sh", input='{"a": 1}') == 'got {"a":1}'
    assert (ws / "scratch" / "out.txt").read_text() == "done\n"
    assert call(inv, "run_script", path="scratch/missing.py").error_code == "script.tool_not_found"
    assert call(inv, "run_script", path="scratch/probe.txt").error_code == "script.edit_invalid"
    assert call(inv, "run_script", path="input/x.py").is_error
