"""Any bytes given as tool.json or SKILL.md give a tool (a skill) or a diagnostic, never an exception."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.catalog.sources import Diagnostic
from tooldeck.sources.script_loader import ScriptSpec, parse_tool_json
from tooldeck.sources.skill_loader import Skill, parse_skill_md

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
                     max_leaves=12)
_fields = st.fixed_dictionaries({}, optional={
    "name": st.one_of(st.text(max_size=60), st.from_regex(r"[a-z_-]{1,20}", fullmatch=True), _json),
    "description": st.one_of(st.text(max_size=40), _json),
    "parameters": st.one_of(_json, st.just({"type": "object", "properties": {"a": {"type": "nope"}}}),
                            st.just({"type": "object", "properties": {"a": {"type": "string"}}})),
    "timeout": st.one_of(st.integers(-5, 5000), st.floats(allow_nan=True), _json),
    "always_allow": _json,
    "concurrent": _json,
})


def _check(data: bytes) -> None:
    out = parse_tool_json(data, "/x/tool.json")
    assert isinstance(out, ScriptSpec | Diagnostic)
    if isinstance(out, Diagnostic):
        assert "/x/tool.json" in out.message and "`" in out.message
    else:
        assert out.parameters["type"] == "object" and isinstance(out.parameters["properties"], dict)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_tool_json_any_bytes(data: bytes) -> None:
    _check(data)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(_fields)
def test_tool_json_any_fields(doc: dict) -> None:
    _check(json.dumps(doc).encode())


_yamlish = st.text(alphabet=st.sampled_from(list("-:[]{}!&*|>'\"#%@`\n ab\t?,.0\\")), max_size=200)


def _check_skill(data: bytes) -> None:
    out = parse_skill_md(data, "/h/skills/ab/SKILL.md", "ab")
    assert isinstance(out, Skill | Diagnostic)
    if isinstance(out, Diagnostic):
        assert "/h/skills/ab/SKILL.md" in out.message and "`" in out.message
    else:
        assert out.name == "ab" and out.description


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_skill_md_any_bytes(data: bytes) -> None:
    _check_skill(data)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(_yamlish, st.sampled_from(["", "name: ab\n", "name: ab\ndescription: d\n"]))
def test_skill_md_any_front_matter(front: str, head: str) -> None:
    _check_skill(f"---\n{head}{front}\n---\nbody\n".encode())


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), st.text(alphabet=st.sampled_from(list("./\\a-_~ \x00:")), max_size=30),
                 st.none(), st.integers()))
def test_edit_skill_paths_stay_under_skills(raw: object) -> None:
    import tempfile
    from pathlib import Path

    from tooldeck.core.errors import ToolCallError
    from tooldeck.sources.authoring import Authoring

    with tempfile.TemporaryDirectory() as tmp:
        authoring = Authoring(Path(tmp))
        try:
            path = authoring._skill_path(raw)
        except ToolCallError as exc:
            assert exc.code == "skill.edit_invalid"
            return
        resolved = path.resolve()
        assert resolved.is_relative_to(Path(tmp, "skills").resolve()) and resolved != Path(tmp, "skills").resolve()
        assert not any(part.startswith(".") for part in path.relative_to(Path(tmp, "skills")).parts)
