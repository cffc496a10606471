"""The cached output-schema check of relayed calls (`sources/mcp/output_check.py`) gives the SDK's verdict and
text: on random schemas and results it raises exactly what `ClientSession.validate_tool_result` raises, and a
conforming result never reaches the SDK's jsonschema walk."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.client.session import ClientSession

from tooldeck.sources.mcp.output_check import OutputChecks, compile_check

TOOL = "t"


def _session() -> ClientSession:
    _send, receive = anyio.create_memory_object_stream(1)
    send, _receive = anyio.create_memory_object_stream(1)
    return ClientSession(receive, send)


def _result(structured: Any, present: bool = True) -> types.CallToolResult:
    wire: dict[str, Any] = {"content": []}
    if present:
        wire["structuredContent"] = structured
    return types.CallToolResult.model_validate(wire, by_name=False)


async def _verdict(check: Any, result: types.CallToolResult) -> str | None:
    try:
        await check(TOOL, result)
    except RuntimeError as exc:
        return str(exc)
    return None


def _both(schema: Any, structured: Any, present: bool = True) -> tuple[str | None, str | None, ClientSession]:
    """(the SDK's verdict, ours, the session ours used): None when valid, else the error's text."""
    sdk, ours = _session(), _session()
    sdk._tool_output_schemas[TOOL] = schema
    ours._tool_output_schemas[TOOL] = schema
    checks = OutputChecks()
    result = _result(structured, present)

    async def run() -> tuple[str | None, str | None]:
        expected = await _verdict(sdk.validate_tool_result, result)
        got = await _verdict(lambda name, r: checks.check(ours, name, r), result)
        return expected, got

    expected, got = asyncio.run(run())
    return expected, got, ours


# -- random schemas and values -------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-5, max_value=5), st.sampled_from([0, 1, 2**53, 2**53 + 1, 2**64, -(2**63) - 1, 2**70]),
    st.floats(allow_nan=False, allow_infinity=False, width=32), st.sampled_from([0.1, 0.3, 1.0, 2.5, -0.0]),
    st.text(alphabet=st.sampled_from("ab1 \ufeff\u00e9\u0663\n"), max_size=4),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "n", "pattern"]), inner, max_size=3)), max_leaves=8)
_NUMBERS = st.one_of(st.integers(min_value=-3, max_value=3), st.sampled_from([0.1, 0.5, 2**53, 2**52 - 1]))
_LEAVES = st.one_of(
    st.booleans(),
    st.just({}),
    st.builds(lambda t: {"type": t}, st.sampled_from(["object", "array", "string", "integer", "number", "boolean",
                                                       "null"])),
    st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(["string", "integer", "null"]), min_size=1,
                                                max_size=2, unique=True)),
    st.builds(lambda v: {"enum": v}, st.lists(_SCALARS, min_size=1, max_size=3)),
    st.builds(lambda v: {"const": v}, _VALUES),
    st.builds(lambda k, n: {k: n}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
              _NUMBERS),
    st.builds(lambda n: {"multipleOf": n}, st.sampled_from([0.1, 2, 0.5])),
    st.builds(lambda k, n: {k: n}, st.sampled_from(["minLength", "maxLength", "minItems", "maxItems",
                                                    "minProperties", "maxProperties"]),
              st.integers(min_value=0, max_value=3)),
    st.builds(lambda p: {"type": "string", "pattern": p}, st.sampled_from([r"^\s*$", r"^\d+$", r"^\w+$", "^a$", "b"])),
    st.just({"type": "string", "format": "email"}),
    st.just({"$ref": "#/$defs/missing"}),
    st.just({"type": "nonsense"}),
)
_SCHEMAS = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.builds(lambda props, req, extra: {"type": "object", "properties": props, "required": req,
                                         "additionalProperties": extra},
              st.dictionaries(st.sampled_from(["a", "b", "n"]), inner, max_size=3),
              st.lists(st.sampled_from(["a", "b", "n"]), max_size=2, unique=True), inner),
    st.builds(lambda items, unique: {"type": "array", "items": items, "uniqueItems": unique}, inner, st.booleans()),
    st.builds(lambda k, subs: {k: subs}, st.sampled_from(["anyOf", "oneOf", "allOf"]),
              st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda sub: {"not": sub}, inner),
    st.builds(lambda sub: {"patternProperties": {"^a": sub}}, inner),
), max_leaves=6)
_OBJECTS = st.dictionaries(st.sampled_from(["a", "b", "n", "pattern"]), _VALUES, max_size=3)


@settings(derandomize=True, max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_SCHEMAS, structured=st.one_of(_OBJECTS, st.none()), present=st.booleans())
def test_the_cached_check_gives_the_sdks_verdict_and_text(schema: Any, structured: Any, present: bool) -> None:
    expected, got, _ = _both(schema, structured, present)
    assert got == expected


_KEYWORDS: list[dict[str, Any]] = [
    {"type": t} for t in ("string", "integer", "number", "boolean", "null", "array", "object")
] + [
    {"enum": [1, "a", None]}, {"enum": [2**70]}, {"const": 1}, {"const": 2**53}, {"const": "\ufeff"},
    {"minimum": 1}, {"maximum": 2**53}, {"exclusiveMaximum": 1}, {"maximum": 0.3}, {"minimum": 2**70},
    {"multipleOf": 0.1}, {"multipleOf": 2}, {"minLength": 1}, {"maxLength": 1},
    {"pattern": r"^\s*$"}, {"pattern": r"^\d+$"}, {"pattern": r"^\w+$"}, {"pattern": "^a$"}, {"pattern": "b"},
    {"format": "email"}, {"format": "date-time"}, {"uniqueItems": True}, {"not": {"type": "string"}},
]
_TRICKY: list[Any] = ["\ufeff", "\u0663", "\u00e9", "a\n", "a", "", 0.3, 0.30000000000000004, 3, 1.0, True, None,
                      2**53, 2**53 + 1, 2**70 + 1, -(2**63) - 1, [1, 1.0], [True, 1], {"x": 1}]


def test_every_keyword_meets_every_tricky_value_with_the_sdks_verdict() -> None:
    """Exhaustive where it matters: each keyword on each value the two engines read differently
    (Unicode classes, `$` before a newline, float multiples, integers past 2**53, True against 1)."""
    for keyword in _KEYWORDS:
        schema = {"type": "object", "properties": {"a": keyword}}
        for value in _TRICKY:
            expected, got, _ = _both(schema, {"a": value})
            assert got == expected, (schema, value)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(schema=_SCHEMAS, values=st.lists(_OBJECTS, min_size=2, max_size=4))
def test_one_cached_check_judges_many_results_as_the_sdk_does(schema: Any, values: list[Any]) -> None:
    """The compiled check is reused across calls (the point of the cache) and stays right on each."""
    sdk, ours = _session(), _session()
    sdk._tool_output_schemas[TOOL] = ours._tool_output_schemas[TOOL] = schema
    checks = OutputChecks()

    async def run() -> None:
        for value in values:
            result = _result(value)
            assert await _verdict(lambda n, r: checks.check(ours, n, r), result) == \
                await _verdict(sdk.validate_tool_result, result)

    asyncio.run(run())


# -- the cases that must go to the SDK ------------------------------------------------------------

@pytest.mark.parametrize(("schema", "value"), [
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": r"^\s*$"}}}, {"s": "\ufeff"}),
    ({"type": "object", "properties": {"x": {"multipleOf": 0.1}}}, {"x": 0.3}),
    ({"type": "object", "properties": {"x": {"maximum": 2**53}}}, {"x": 2**53 + 1}),
    ({"type": "object", "properties": {"x": {"const": 2**70}}}, {"x": 2**70 + 1}),
])
def test_where_the_engines_differ_the_sdk_decides(schema: dict[str, Any], value: Any) -> None:
    """Values `jsonschema_rs` accepts and the SDK rejects: the schema gets no fast check, the SDK's error comes back."""
    assert compile_check(schema) is None
    expected, got, _ = _both(schema, value)
    assert expected is not None and expected.startswith("Invalid structured content returned by tool t: ")
    assert got == expected


def test_a_conforming_result_never_reaches_the_sdks_walk() -> None:
    schema = {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    expected, got, ours = _both(schema, {"result": "hello"})
    assert expected is None and got is None
    assert TOOL not in ours._tool_output_validators  # the SDK never compiled (so never ran) its validator


def test_a_new_schema_for_the_tool_is_checked_as_the_new_one() -> None:
    """A re-listing replaces the schema object: the check compiled for the old one is not used for it."""
    session = _session()
    checks = OutputChecks()
    session._tool_output_schemas[TOOL] = {"type": "object", "properties": {"n": {"type": "integer"}}}

    async def run() -> tuple[str | None, str | None]:
        first = await _verdict(lambda n, r: checks.check(session, n, r), _result({"n": 1}))
        session._tool_output_schemas[TOOL] = {"type": "object", "properties": {"n": {"type": "string"}}}
        return first, await _verdict(lambda n, r: checks.check(session, n, r), _result({"n": 1}))

    first, second = asyncio.run(run())
    assert first is None
    assert second is not None and "1 is not of type 'string'" in second


def test_a_missing_structured_content_and_a_bad_schema_keep_the_sdks_errors() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    expected, got, _ = _both(schema, None, present=False)
    assert got == expected == "Tool t has an output schema but did not return structured content"
    expected, got, _ = _both({"type": "nonsense"}, {"n": 1})
    assert expected is not None and expected.startswith("Invalid schema for tool t: ")
    assert got == expected


FIXTURE = __import__("pathlib").Path(__file__).resolve().parent / "fixtures" / "fixture_server.py"


def test_a_relayed_call_checks_its_result_once_compiled(tmp_path: Any) -> None:
    """End to end (a Runtime, the fixture server over stdio): `echo` declares an output schema; its results are
    checked by the cached check, and the SDK compiles (so runs) no validator of its own for them."""
    import json

    from tooldeck.runtime import Runtime

    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"fx": {"command": sys.executable,
                                                                         "args": [str(FIXTURE)]}}}))
    rt = Runtime(tmp_path, builtins=[], records=False, profile={"allow": ["mcp/*"]})
    try:
        inv = rt.invocation()
        for i in range(3):
            [result] = inv.run([{"id": f"c{i}", "name": "mcp__fx__echo", "arguments": {"message": f"hi {i}"}}])
            assert not result.is_error and f"hi {i}" in result.content
        [connection] = [s.connection for s in rt.mcp._servers.values()]  # type: ignore[union-attr]
        session = connection.client.session
        assert session._tool_output_schemas.get("echo") is not None  # the fixture declares one
        assert "echo" in connection.output_checks._checks
        assert "echo" not in session._tool_output_validators
    finally:
        rt.close()
