"""The parts of the request relay that read what a client sent: the progress token of a `tools/call`, and the
log-level filter. Any `_meta` shape is read without raising; only a string or integer token is taken."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.server.relay_requests import LEVELS, progress_token

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                  max_size=3), max_leaves=8)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["_meta", "name", "arguments"]),
                       _JSON | st.dictionaries(st.sampled_from(["progressToken", "x"]), _JSON, max_size=2),
                       max_size=3))
def test_any_raw_params_give_a_token_or_none(params: dict[str, Any]) -> None:
    token = progress_token(params)
    meta = params.get("_meta")
    raw = meta.get("progressToken") if isinstance(meta, dict) else None
    if isinstance(raw, str | int) and not isinstance(raw, bool):
        assert token == raw
    else:
        assert token is None


@settings(derandomize=True, max_examples=100, deadline=None)
@given(st.one_of(st.text(max_size=10), st.integers()))
def test_typed_params_give_the_clients_token(token: str | int) -> None:
    params = types.CallToolRequestParams.model_validate({"name": "t", "_meta": {"progressToken": token}})
    assert progress_token(params) == token
    assert progress_token(types.CallToolRequestParams(name="t")) is None


def test_levels_are_the_spec_order() -> None:
    assert LEVELS == ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
