"""core/typed_config: the Profile's checker (no pydantic at start-up), held to what pydantic gave it."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.catalog.profile import Profile, WorkspaceRoots
from tooldeck.core.errors import ProfileError
from tooldeck.core.typed_config import Config, ConfigError, Field, config_class, field_validator


@config_class
class Inner(Config):
    names: list[str] = Field(default_factory=list)


@config_class
class Sample(Config):
    count: int = Field(default=1, ge=1, lt=10)
    ratio: float = Field(default=0.5, gt=0)
    flag: bool = False
    mode: Literal["a", "b"] = "a"
    url: str | None = None
    table: dict[str, int] = Field(default_factory=dict)
    inner: Inner = Field(default_factory=Inner)
    anything: Any = None
    upper: str = "X"

    @field_validator("upper")
    @classmethod
    def _upper(cls, value: str) -> str:
        if not value:
            raise ValueError("must not be empty")
        return value.upper()


def problems(data: Any) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as err:
        Sample.from_mapping(data)
    return err.value.problems


def test_defaults_and_explicit_fields() -> None:
    s = Sample()
    assert (s.count, s.ratio, s.mode, s.inner.names, s.fields_set) == (1, 0.5, "a", [], frozenset())
    t = Sample.from_mapping({"count": 3, "inner": {"names": ["x"]}, "upper": "abc"})
    assert (t.count, t.inner.names, t.upper, t.fields_set) == (3, ["x"], "ABC", {"count", "inner", "upper"})
    assert t.inner.fields_set == {"names"}
    assert Sample(ratio=2) == Sample(ratio=2.0) and isinstance(Sample(ratio=2).ratio, float)


@pytest.mark.parametrize(("data", "where", "words"), [
    ({"count": 0}, "count", "greater than or equal to 1"),
    ({"count": 10}, "count", "less than 10"),
    ({"count": True}, "count", "an integer, got bool"),  # True is not 1 here
    ({"count": "5"}, "count", "an integer, got str"),  # no coercion across kinds
    ({"ratio": 0}, "ratio", "greater than 0"),
    ({"flag": 1}, "flag", "true or false"),
    ({"mode": "c"}, "mode", "one of 'a', 'b'"),
    ({"url": 3}, "url", "a string or null"),
    ({"table": {"k": "v"}}, "table.k", "an integer"),
    ({"table": []}, "table", "a table"),
    ({"inner": {"names": [1]}}, "inner.names.0", "a string"),
    ({"inner": {"other": 1}}, "inner.other", "unknown key"),
    ({"upper": ""}, "upper", "must not be empty"),
    ({"nope": 1}, "nope", "unknown key (the keys are count, ratio"),
])
def test_each_problem_names_its_place_and_what_is_expected(data: dict[str, Any], where: str, words: str) -> None:
    [(loc, msg)] = problems(data)
    assert loc == where and words in msg, msg


def test_every_problem_is_reported_at_once_and_nothing_is_built() -> None:
    found = problems({"count": 0, "mode": "z", "x": 1})
    assert sorted(loc for loc, _ in found) == ["count", "mode", "x"]
    with pytest.raises(ConfigError):
        Sample(count=0)
    assert [loc for loc, _ in problems([1])] == [""]  # not a table at all


def test_frozen_and_replace_checks_again_keeping_explicit_fields() -> None:
    s = Sample(count=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.count = 3  # type: ignore[misc]
    r = s.replace(mode="b")
    assert (r.count, r.mode, r.fields_set) == (2, "b", {"count", "mode"})
    with pytest.raises(ConfigError):
        s.replace(count=99)
    assert s.count == 2


def test_a_validator_on_an_unknown_field_is_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError):
        @config_class
        class Bad(Config):
            a: int = 1

            @field_validator("b")
            @classmethod
            def _b(cls, value: int) -> int:
                return value


def test_profile_replace_keeps_parsed_preconditions_and_roots() -> None:
    p = Profile.parse({"requires": {"extension/*": {"interactive": True}}, "workspace": {"writable": ["w"]}})
    q = p.replace(loading="deferred")
    assert q.requires == p.requires and q.workspace == WorkspaceRoots(writable=["w"])
    assert q.fields_set == {"requires", "workspace", "loading"}


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=3), max_leaves=12)
profile_keys = st.sampled_from(["allow", "deny", "permissions", "loading", "max_calls_per_invocation", "tool_timeout_s",
                                "max_calls_per_tool", "workspace", "requires", "descriptions", "net_allow", "x"])


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.dictionaries(profile_keys, json_values, max_size=4) | json_values)
def test_any_parsed_document_is_a_profile_or_profile_invalid(data: Any) -> None:
    try:
        profile = Profile.parse(data)
    except ProfileError as exc:
        assert exc.code == "profile.invalid" and str(exc)
        return
    assert isinstance(data, dict)
    for key, value in data.items():
        if key in ("allow", "deny", "net_allow", "loading", "max_calls_per_invocation"):
            assert getattr(profile, key) == value
