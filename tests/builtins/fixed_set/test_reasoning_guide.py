"""reasoning_guide: every topic answers its shipped text (written for tooldeck's own tools), several topics
at once, and an unknown or missing topic lists the topics there are."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builtins.fixed_set.support import call
from tests.conftest import MakeRuntime
from tooldeck.builtins import default_builtins
from tooldeck.builtins import reasoning_guide as rg
from tooldeck.core.errors import ToolCallError

AVAILABLE = "available: " + ", ".join(rg.TOPICS)


def test_every_topic_is_shipped_as_package_data_and_nothing_else_is() -> None:
    shipped = {p.name.removesuffix(".md") for p in resources.files("tooldeck.builtins").joinpath("guides").iterdir()
               if p.name.endswith(".md")}
    assert shipped == set(rg.TOPICS)


def test_the_guides_name_only_tools_tooldeck_has() -> None:
    """Every `snake_case` name a guide puts in backticks as a tool is a tooldeck tool (or its prefix form)."""
    tools = {t.descriptor.id.name.replace(".", "_") for t in default_builtins()}
    tools |= {"find_tools", "run_tool", "chat_history", "edit_tool", "test_tool", "run_skill"}
    for topic in rg.TOPICS:
        for name in re.findall(r"`([a-z]+(?:_[a-z]+)+)`", rg.guide(topic)):
            if name.startswith(("workspace_", "background_")) or name in tools:
                assert name in tools, f"{topic} names {name}, which tooldeck does not have"


@pytest.mark.parametrize("topic", list(rg.TOPICS))
def test_a_topic_answers_its_text(make_runtime: MakeRuntime, topic: str) -> None:
    result = call(make_runtime().invocation(), "reasoning_guide", {"topic": topic})
    assert not result.is_error
    assert result.content == rg.guide(topic) and result.content.startswith("# ")


def test_several_topics_in_one_call_in_the_order_asked(make_runtime: MakeRuntime) -> None:
    result = call(make_runtime().invocation(), "reasoning_guide", {"topics": ["write_todo", "ask_user", "write_todo"]})
    assert result.content == f"## write_todo\n\n{rg.guide('write_todo')}\n\n## ask_user\n\n{rg.guide('ask_user')}"
    assert result.structured == {"topics": ["write_todo", "ask_user"]}


def test_an_unknown_topic_lists_the_topics(make_runtime: MakeRuntime) -> None:
    inv = make_runtime().invocation()
    result = call(inv, "reasoning_guide", {"topic": "market_analysis"})
    assert result.error_code == rg.UNKNOWN_TOPIC
    assert result.content == f'unknown topic "market_analysis"; {AVAILABLE}'
    mixed = call(inv, "reasoning_guide", {"topics": ["tool_error", "nope"]})
    assert mixed.error_code == rg.UNKNOWN_TOPIC and mixed.content.startswith('unknown topic "nope"')


def test_no_topic_is_an_error_that_lists_them(make_runtime: MakeRuntime) -> None:
    result = call(make_runtime().invocation(), "reasoning_guide", {})
    assert result.error_code == rg.TOPIC_REQUIRED and result.content == f"topic is required; {AVAILABLE}"


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "topic": st.one_of(st.sampled_from(list(rg.TOPICS)), st.text(max_size=15)),
    "topics": st.lists(st.one_of(st.sampled_from(list(rg.TOPICS)), st.text(max_size=15)), max_size=4)}))
def test_decoding_any_arguments_answers_known_topics_or_names_the_unknown_one(args: dict[str, object]) -> None:
    asked = [*([args["topic"]] if "topic" in args else []), *args.get("topics", [])]  # type: ignore[list-item]
    try:
        out = rg.reasoning_guide(args, None)  # type: ignore[arg-type]
    except ToolCallError as exc:
        if exc.code == rg.TOPIC_REQUIRED:
            assert not asked
        else:
            assert exc.code == rg.UNKNOWN_TOPIC
            assert any(str(t).strip() not in rg.TOPICS for t in asked)
        return
    assert out.structured["topics"] == list(dict.fromkeys(str(t).strip() for t in asked))
    for topic in out.structured["topics"]:
        assert rg.guide(topic) in out.content
