"""Reading an invocation's tools array, in every provider's shape tooldeck renders, back into the
(name, description, schema) the adapters hand to a framework."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.adapters._specs import NATIVE_SEARCH_UNSUPPORTED, TOOL_SHAPE_UNSUPPORTED, tool_specs
from tooldeck.core.errors import TooldeckError
from tooldeck.naming import PROTOCOLS
from tooldeck.snapshot.render import render_tool, wrap_tools_array

from .conftest import MakeRuntime


@pytest.mark.parametrize("provider", PROTOCOLS)
def test_every_provider_shape_gives_the_same_tools(provider: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime(records=False)
    specs = tool_specs(rt.invocation(provider=provider).tools())
    names = [s.name for s in specs]
    assert "forecast" in names and "workspace_write_file" in names
    forecast = specs[names.index("forecast")]
    assert forecast.description.startswith("Weather forecast for a city.")
    assert forecast.parameters["required"] == ["city"]
    assert set(forecast.parameters["properties"]) == {"city", "days"}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_native_search_is_refused_with_its_own_code(provider: str, make_runtime: MakeRuntime) -> None:
    rt = make_runtime({"loading": "deferred", "native_search": True}, records=False)
    with pytest.raises(TooldeckError) as caught:
        tool_specs(rt.invocation(provider=provider).tools())
    assert caught.value.code == NATIVE_SEARCH_UNSUPPORTED
    assert "native_search = false" in caught.value.message


def test_a_gemini_declaration_without_parameters_gets_an_empty_object_schema() -> None:
    array = wrap_tools_array([render_tool("ping", "Ping.", {}, "gemini")], "gemini")
    [spec] = tool_specs(array)
    assert (spec.name, spec.description, spec.parameters) == ("ping", "Ping.", {"type": "object", "properties": {}})


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)
ENTRY = st.one_of(
    JSON,
    st.fixed_dictionaries({"type": st.just("function"), "function": JSON}),
    st.fixed_dictionaries({"name": JSON, "description": JSON, "input_schema": JSON}),
    st.fixed_dictionaries({"functionDeclarations": st.lists(JSON, max_size=3)}),
    st.fixed_dictionaries({"toolSpec": st.fixed_dictionaries({"name": JSON, "inputSchema": JSON})}),
)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(ENTRY, max_size=4))
def test_any_array_gives_specs_or_one_clear_error(array: list[Any]) -> None:
    try:
        specs = tool_specs(array)
    except TooldeckError as exc:
        assert exc.code in (TOOL_SHAPE_UNSUPPORTED, NATIVE_SEARCH_UNSUPPORTED)
        assert len(exc.message) < 400
        return
    for spec in specs:
        assert isinstance(spec.name, str) and spec.name
        assert isinstance(spec.description, str)
        assert isinstance(spec.parameters, dict)
