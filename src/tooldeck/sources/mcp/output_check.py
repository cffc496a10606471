r"""The output-schema check of a relayed MCP call, without the SDK's per-call jsonschema walk.

The SDK's client (`ClientSession.validate_tool_result`) checks a result's `structuredContent` against the tool's
`outputSchema` on every call with the pure-Python `jsonschema` (`best_match(iter_errors)`): ≈ 10–16 µs for a small
result (a cProfile of the serve process overstates it at ≈ 8 %; measured it is ≈ 1 % of a served call's CPU),
against ≈ 0.5 µs compiled (`python -m bench.mcp_bench`). Here a conforming result is recognised by a compiled
`jsonschema_rs` validator, cached per connection and tool for the schema object the session holds (a re-listing
gives a new object, so a changed schema is never checked against the old one). Anything else - a result the fast
check rejects or cannot read, a schema it cannot compile or that the SDK's own `check_schema` rejects, a missing
`structuredContent`, a tool the session has not listed - goes to the SDK's check, so every failure keeps the SDK's
exact verdict and message. The fast check must never accept what the SDK rejects, so a schema where the two engines
can differ is left to the SDK: one with `pattern` / `patternProperties` (`jsonschema_rs`'s `\s` matches U+FEFF,
Python's `re` does not), `multipleOf` (0.3 is a multiple of 0.1 for `jsonschema_rs`, not for the SDK's float
division), or, as a precaution, a number of 2**52 or more (past the integers a float holds exactly, where the two
engines' number models part). `format` is asserted by neither. tests/mcp/test_output_check.py holds the fast check
to the SDK's verdicts on random schemas and results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.client.session import ClientSession

_MAX_TOOLS = 4_096
"""Cached tools per connection; past this the cache starts again (a server with that many tools is rare)."""

IsValid = Callable[[Any], bool]


class OutputChecks:
    """The compiled output-schema checks of one MCP connection's tools (tool name → (schema, check))."""

    __slots__ = ("_checks",)

    def __init__(self) -> None:
        self._checks: dict[str, tuple[Any, IsValid | None]] = {}

    async def check(self, session: ClientSession, name: str, result: types.CallToolResult) -> None:
        """Raise what `session.validate_tool_result(name, result)` raises; return when it would return."""
        schema = session._tool_output_schemas.get(name)
        if schema is not None and (result.structured_content is not None
                                   or "structured_content" in result.model_fields_set):
            is_valid = self._compiled(name, schema)
            if is_valid is not None:
                try:
                    if is_valid(result.structured_content):
                        return
                except (ValueError, TypeError, OverflowError, RecursionError):
                    pass  # a value the fast check cannot read: the SDK decides
        await session.validate_tool_result(name, result)

    def _compiled(self, name: str, schema: Any) -> IsValid | None:
        cached = self._checks.get(name)
        if cached is not None and cached[0] is schema:
            return cached[1]
        is_valid = compile_check(schema)
        if len(self._checks) >= _MAX_TOOLS:
            self._checks.clear()
        self._checks[name] = (schema, is_valid)
        return is_valid

    def forget(self) -> None:
        """A new session: its schemas are new objects anyway; drop the old ones' checks."""
        self._checks.clear()


def compile_check(schema: Any) -> IsValid | None:
    """The fast check of `schema`, or None when only the SDK can judge it (a schema the SDK's
    `check_schema` rejects, or `jsonschema_rs` cannot compile offline)."""
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict) or not _comparable(schema):
        return None
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError:
        return None  # the SDK reports it on every call
    except Exception:  # a schema the SDK's own compile trips on: let it say so
        return None
    try:
        return jsonschema_rs.validator_for(schema, validate_formats=False, offline=True).is_valid  # type: ignore[no-any-return]
    except (jsonschema_rs.ValidationError, ValueError, TypeError, OverflowError, RecursionError):
        return None


_UNSHARED = frozenset(("pattern", "patternProperties", "multipleOf"))
"""Keywords the two engines judge differently on some values."""
_EXACT = 1 << 52
"""Numbers below this (in absolute value) compare the same as floats and exactly."""


def _comparable(schema: Any, depth: int = 0) -> bool:
    """No keyword or number in `schema` on which `jsonschema_rs` could accept what the SDK rejects."""
    if depth > 64:
        return False
    if isinstance(schema, dict):
        return all(key not in _UNSHARED and _comparable(value, depth + 1) for key, value in schema.items())
    if isinstance(schema, list):
        return all(_comparable(item, depth + 1) for item in schema)
    if isinstance(schema, int | float) and not isinstance(schema, bool):
        return -_EXACT < schema < _EXACT
    return True


__all__ = ["OutputChecks", "compile_check"]
