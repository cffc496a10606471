"""Conditional registration (issue 14.5): `is_enabled(ctx)` for Python tools and declarative `requires`
(env, secret, executable, interactive, provider_capability) from the Profile, answered once per
invocation before the snapshot freezes, with the reason kept for the tools left out."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tests.conftest import MakeRuntime
from tooldeck.core.descriptors import AvailabilityContext
from tooldeck.core.errors import ProfileError
from tooldeck.core.preconditions import KINDS, Requires, RequiresError, parse_requires

EXT = "extension/ext:probe"


def _runtime(make_runtime: MakeRuntime, requires: dict[str, Any] | None = None, **options: Any) -> tooldeck.Runtime:
    profile: dict[str, Any] = {"requires": {EXT: requires}} if requires is not None else {}
    rt = make_runtime(profile=profile, records=False, builtins=(), **options)

    @rt.tool("ext")
    def probe() -> str:
        """Probe."""
        return "ok"

    return rt


def _offered(rt: tooldeck.Runtime, **kw: Any) -> tuple[bool, list[tuple[str, str]]]:
    inv = rt.invocation(**kw)
    return "probe" in inv.call_names(), rt.snapshots.left_out(inv.snapshot)


# -- each kind on and off ----------------------------------------------------------------------


def test_env_on_and_off(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime, {"env": "TOOLDECK_TEST_TOKEN"})
    monkeypatch.delenv("TOOLDECK_TEST_TOKEN", raising=False)
    assert _offered(rt) == (False, [(EXT, "requires env TOOLDECK_TEST_TOKEN (not set)")])
    monkeypatch.setenv("TOOLDECK_TEST_TOKEN", "")
    assert _offered(rt)[0] is False  # set but empty counts as not set
    monkeypatch.setenv("TOOLDECK_TEST_TOKEN", "x")
    assert _offered(rt) == (True, [])


def test_secret_is_the_environment_variable_of_its_name(make_runtime: MakeRuntime,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _runtime(make_runtime, {"secret": ["TOOLDECK_TEST_SECRET"]})
    monkeypatch.delenv("TOOLDECK_TEST_SECRET", raising=False)
    assert _offered(rt) == (False, [(EXT, "requires secret TOOLDECK_TEST_SECRET (not set)")])
    monkeypatch.setenv("TOOLDECK_TEST_SECRET", "s3cret")
    assert _offered(rt) == (True, [])


def test_executable_on_path(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    rt = _runtime(make_runtime, {"executable": "tooldeck-test-prog"})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert _offered(rt) == (False, [(EXT, "requires executable tooldeck-test-prog (not found on PATH)")])
    prog = bin_dir / "tooldeck-test-prog"
    prog.write_text("#!/bin/sh\necho hi\n")
    assert _offered(rt)[0] is False  # present but not executable
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    assert _offered(rt) == (True, [])


def test_interactive_and_headless_origins(make_runtime: MakeRuntime) -> None:
    rt = _runtime(make_runtime, {"interactive": True})
    assert _offered(rt, headless=False) == (True, [])
    assert _offered(rt, headless=True) == (False, [(EXT, "requires an interactive origin (this invocation is "
                                                         "headless)")])
    only_headless = _runtime(make_runtime, {"interactive": False})
    assert _offered(only_headless, headless=True)[0] is True
    assert _offered(only_headless, headless=False)[0] is False


def test_provider_capability(make_runtime: MakeRuntime) -> None:
    rt = _runtime(make_runtime, {"provider_capability": "images"})
    assert _offered(rt, provider="anthropic") == (True, [])
    assert _offered(rt, provider="openai") == (False, [(EXT, "requires provider capability images (openai has "
                                                             "not)")])


def test_profile_globs_apply_and_merge(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLDECK_TEST_A", "1")
    monkeypatch.delenv("TOOLDECK_TEST_B", raising=False)
    rt = make_runtime(profile={"requires": {"extension/*": {"env": "TOOLDECK_TEST_A"},
                                            "extension/ext:b*": {"env": "TOOLDECK_TEST_B"}}},
                      records=False, builtins=())

    @rt.tool("ext")
    def alpha() -> str:
        """A."""
        return "a"

    @rt.tool("ext")
    def beta() -> str:
        """B."""
        return "b"

    inv = rt.invocation()
    assert list(inv.call_names()) == ["alpha"]
    assert rt.snapshots.left_out(inv.snapshot) == [("extension/ext:beta", "requires env TOOLDECK_TEST_B (not set)")]


def test_profile_requires_invalid_names_the_key_and_field() -> None:
    with pytest.raises(ProfileError) as err:
        tooldeck.Profile.parse({"requires": {"extension/*": {"env": 3}}})
    assert err.value.code == "profile.invalid"
    assert "requires['extension/*'].env" in str(err.value)
    with pytest.raises(ProfileError) as err:
        tooldeck.Profile.parse({"requires": {"extension/*": {"gpu": True}}})
    assert "requires['extension/*'].gpu" in str(err.value) and "unknown precondition" in str(err.value)


# -- is_enabled ------------------------------------------------------------------------------


def test_is_enabled_true_false_and_raising(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(records=False, builtins=())
    state: dict[str, Any] = {"answer": True, "asked": []}

    def gate(ctx: AvailabilityContext) -> bool:
        state["asked"].append((ctx.provider, ctx.headless, ctx.scene))
        if state["answer"] == "raise":
            raise RuntimeError("licence server down")
        return bool(state["answer"])

    @rt.tool("ext", is_enabled=gate)
    def guarded() -> str:
        """Guarded."""
        return "ran"

    inv = rt.invocation(provider="anthropic", headless=True)
    assert list(inv.call_names()) == ["guarded"]
    assert not [d for d in inv.diagnostics if d.code == "tool.condition_failed"]
    assert state["asked"] == [("anthropic", True, "chat")]  # once per invocation
    [ok] = inv.run([{"id": "c1", "name": "guarded", "arguments": {}}])
    assert ok.content == "ran" and len(state["asked"]) == 1  # a call does not ask again

    state["answer"] = False
    inv = rt.invocation()
    assert not inv.call_names()
    assert rt.snapshots.left_out(inv.snapshot) == [("extension/ext:guarded", "gate(ctx) answered false")]
    assert len(state["asked"]) == 2

    state["answer"] = "raise"
    inv = rt.invocation()  # never crashes the invocation
    assert not inv.call_names()
    [diag] = [d for d in inv.diagnostics if d.code == "tool.condition_failed"]
    assert diag.tool_id == "extension/ext:guarded" and "RuntimeError: licence server down" in diag.message
    assert rt.snapshots.left_out(inv.snapshot) == [
        ("extension/ext:guarded", "gate(ctx) raised RuntimeError: licence server down")]


def test_is_enabled_must_be_callable(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(records=False, builtins=())
    with pytest.raises(tooldeck.TooldeckError) as err:
        rt.extensions.register(lambda: "x", "ext", "bad", description="Bad.", is_enabled=True)  # type: ignore[arg-type]
    assert err.value.code == "extension.tool_definition_invalid"


def test_snapshot_reuse_keys_on_the_answers(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLDECK_TEST_FLIP", "1")
    rt = _runtime(make_runtime, {"env": "TOOLDECK_TEST_FLIP"})
    first, second = rt.invocation(), rt.invocation()
    assert second.snapshot is first.snapshot and "probe" in first.call_names()
    monkeypatch.delenv("TOOLDECK_TEST_FLIP")
    third = rt.invocation()
    assert third.snapshot.id != first.snapshot.id and "probe" not in third.call_names()
    monkeypatch.setenv("TOOLDECK_TEST_FLIP", "1")
    assert rt.invocation().snapshot is first.snapshot  # the earlier answers come back: the earlier snapshot


# -- the parser ------------------------------------------------------------------------------


def test_parse_requires_accepts_each_kind() -> None:
    assert parse_requires(None) == Requires()
    assert not parse_requires({})
    got = parse_requires({"env": "A", "secret": ["B", "C"], "executable": "git", "interactive": True,
                          "provider_capability": ["images"]})
    assert got == Requires(("A",), ("B", "C"), ("git",), True, ("images",))


@pytest.mark.parametrize(("value", "field"), [
    ([], "requires"), ({"env": []}, "requires.env"), ({"env": [""]}, "requires.env"),
    ({"interactive": "yes"}, "requires.interactive"), ({"provider_capability": "telepathy"},
                                                       "requires.provider_capability"),
    ({"nope": 1}, "requires.nope"),
])
def test_parse_requires_rejects_with_the_field(value: Any, field: str) -> None:
    with pytest.raises(RequiresError) as err:
        parse_requires(value)
    assert err.value.field == field


_keys = st.sampled_from([*KINDS, "x", ""]) | st.text(max_size=4)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=12,
)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(json_values)
def test_parse_requires_any_json_value_gives_conditions_or_an_error(value: Any) -> None:
    try:
        got = parse_requires(value)
    except RequiresError as exc:
        assert exc.field.startswith("requires") and exc.message
        return
    assert isinstance(got, Requires)
    json.dumps([list(got.env), list(got.secret), list(got.executable), got.interactive])
