"""The names `tooldeck serve` gives upstream resources, templates and prompts (`sources/mcp/namespace.py`):
the rewritten URI decodes back to exactly what was encoded, for any server name and any string; a listing's
offered URIs are distinct, route back to their server and original, and leave unclashed URIs unchanged; prompt
names are distinct and route back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.server.upstream import template_pattern
from tooldeck.sources.mcp.namespace import SCHEME, assign_prompts, assign_uris, decode_uri, encode_uri

servers = st.text(min_size=1, max_size=20)
uris = st.one_of(st.text(max_size=60), st.sampled_from(["note://a", "note://{id}", SCHEME + "x/y", "", "a/b"]))


@settings(derandomize=True, max_examples=600, deadline=None)
@given(servers, uris)
def test_encode_decode_round_trip(server: str, original: str) -> None:
    encoded = encode_uri(server, original)
    assert encoded.startswith(SCHEME)
    assert decode_uri(encoded) == (server, original)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c/d", "e f"]), uris), max_size=12))
def test_assigned_uris_are_distinct_and_route_back(listed: list[tuple[str, str]]) -> None:
    offered = assign_uris(listed)
    assert set(offered.values()) == set(listed)  # every (server, uri) is offered exactly once
    for uri, (server, original) in offered.items():
        if uri != original:
            assert decode_uri(uri) == (server, original)
    owners: dict[str, set[str]] = {}
    for server, original in listed:
        owners.setdefault(original, set()).add(server)
    for original, who in owners.items():
        if len(who) == 1 and not original.startswith(SCHEME):
            assert offered[original] == (next(iter(who)), original)  # unique: unchanged
        if len(who) > 1 and not original.startswith(SCHEME):
            assert offered[original] == (min(who), original)  # a clash: the first by name keeps it


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["fa", "fb", "fc"]), st.text(min_size=1, max_size=30)), max_size=12),
       st.booleans())
def test_prompt_names_are_distinct_and_route_back(listed: list[tuple[str, str]], original: bool) -> None:
    names = assign_prompts(((s, s, p) for s, p in listed), original)
    assert set(names.values()) == set(listed)
    assert len({n.casefold() for n in names}) == len(names)
    for name, (server, prompt) in names.items():
        assert name == prompt or name.startswith(f"mcp__{server}__")


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="/?#{}"), max_size=20))
def test_a_simple_template_matches_its_expansions(value: str) -> None:
    assert template_pattern("note://{id}/x").fullmatch(f"note://{value}/x")
    assert not template_pattern("note://{id}/x").fullmatch(f"note://{value}/y/x")
