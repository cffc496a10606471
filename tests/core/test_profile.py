import json

import pytest

import tooldeck
from tests.core.helpers import builtin
from tooldeck.catalog.profile import DEFAULT_ALLOW, Profile
from tooldeck.core.errors import ProfileError
from tooldeck.core.results import ToolOutput

SCHEMA = {"type": "object", "properties": {"q": {"type": "string", "description": "old"}}}


def test_defaults():
    p = Profile()
    assert p.max_calls_per_invocation == 80
    assert p.result_inline_limit == 50_000 and p.preview_chars == 3_000
    assert p.loading == "eager"
    assert "builtin:workspace.shell" in p.allow
    assert tuple(p.allow) == DEFAULT_ALLOW


def test_load_toml_and_json(tmp_path):
    (tmp_path / "p.toml").write_text('allow = ["builtin:dice.roll"]\nmax_calls_per_invocation = 5\n'
                                     '[max_calls_per_tool]\n"builtin:dice.roll" = 2\n')
    p = Profile.load(tmp_path / "p.toml")
    assert p.allow == ["builtin:dice.roll"] and p.max_calls_per_tool == {"builtin:dice.roll": 2}
    (tmp_path / "p.json").write_text(json.dumps({"profile": {"deny": ["builtin:dice.roll"]}}))
    assert Profile.load(tmp_path / "p.json").deny == ["builtin:dice.roll"]


@pytest.mark.parametrize("data", [{"unknown": 1}, {"max_calls_per_invocation": 0}, {"allow": ["builtin"]},
                                  {"max_calls_per_tool": {"builtin:x": 0}}, {"permissions": {"*": "maybe"}},
                                  {"loading": "lazy"}])
def test_bad_profiles_are_rejected_with_a_clear_error(data):
    with pytest.raises(ProfileError) as err:
        Profile.parse(data)
    assert err.value.code == "profile.invalid"


def test_unreadable_and_unparsable_files(tmp_path):
    with pytest.raises(ProfileError) as err:
        Profile.load(tmp_path / "missing.toml")
    assert err.value.code == "profile.unreadable"
    (tmp_path / "bad.toml").write_text("allow = [")
    with pytest.raises(ProfileError) as err:
        Profile.load(tmp_path / "bad.toml")
    assert err.value.code == "profile.unparsable"


def test_allow_order_deny_and_description_overrides(make_runtime):
    tools = [builtin(n, lambda a, c: ToolOutput("x"), SCHEMA) for n in ("b.tool", "a.tool", "c.tool")]
    rt = make_runtime(builtins=tools, profile={
        "allow": ["builtin:c.tool", "builtin:*"], "deny": ["builtin:a.*"],
        "descriptions": {"builtin:b.tool": {"description": "New text.", "properties": {"q": "new"}}}})
    inv = rt.invocation()
    assert list(inv.call_names()) == ["c_tool", "b_tool"]
    b = inv.tools()[1]["function"]
    assert b["description"] == "New text."
    assert b["parameters"]["properties"]["q"] == {"type": "string", "description": "new"}


def test_override_of_an_unknown_property_is_an_error(make_runtime):
    tools = [builtin("b.tool", lambda a, c: ToolOutput("x"), SCHEMA)]
    rt = make_runtime(builtins=tools, profile={
        "allow": ["builtin:*"], "descriptions": {"builtin:b.tool": {"properties": {"nope": "x"}}}})
    with pytest.raises(ProfileError) as err:
        rt.invocation()
    assert err.value.code == "tool.description_override_unknown_property"


def test_home_profile_file_is_used(tmp_path):
    (tmp_path / "profile.toml").write_text('allow = ["builtin:dice.roll"]\n')
    with tooldeck.open(tmp_path) as rt:
        assert rt.invocation().call_names() == {"dice_roll": "builtin:dice.roll"}


def test_missing_tools_become_diagnostics_not_failures(make_runtime):
    inv = make_runtime(allow=["builtin:dice.roll", "extension/nope:x"]).invocation()
    assert [d.tool_id for d in inv.diagnostics] == ["extension/nope:x"]
    assert inv.call_names() == {"dice_roll": "builtin:dice.roll"}
