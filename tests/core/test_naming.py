import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.corpus import bfcl_functions
from tooldeck.naming import PROTOCOLS, RULES, allocate, mcp_model_name, sanitize

SAFE_CORE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def assert_valid_and_unique(names, protocol):
    rule = RULES[protocol]
    for name in names:
        assert rule.is_valid(name), (protocol, name)
    assert len({n.casefold() for n in names}) == len(names)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tauritavern_alias_cases_stay_valid_and_unique(protocol):
    long_mcp = mcp_model_name("a very long server name that keeps going", "tool." + "x" * 80, protocol)
    inputs = ["read.state", "read_state", "界" * 80, "界" * 81, long_mcp, long_mcp]
    names = allocate(inputs, protocol)
    assert_valid_and_unique(names, protocol)
    if protocol != "bedrock":
        assert names[0] == "read_state" or names[0].endswith("read_state")
    assert names[1].endswith("__2")
    assert names[5].endswith("__2")


def test_clash_suffixes_and_reserved_names():
    assert allocate(["inspect", "inspect", "inspect"]) == ["inspect", "inspect__2", "inspect__3"]
    assert allocate(["workspace_write_file"], reserved=["workspace_write_file"]) == ["workspace_write_file__2"]
    assert allocate(["a" * 70, "a" * 70]) == ["a" * 64, "a" * 61 + "__2"]


def test_mcp_names_fit_and_the_server_gives_way_first():
    assert mcp_model_name("my server", "issue.create") == "mcp__my_server__issue_create"
    name = mcp_model_name("s" * 40, "t" * 40)
    assert len(name) == 64
    assert name == "mcp__" + "s" * 20 + "__" + "t" * 37
    short_server = mcp_model_name("gh", "t" * 100)
    assert short_server.startswith("mcp__gh__") and len(short_server) == 64
    assert mcp_model_name("!!!", "???") == "mcp__server__tool"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@settings(max_examples=150, deadline=None)
@given(names=st.lists(st.text(min_size=0, max_size=90), max_size=25),
       reserved=st.lists(st.text(max_size=20), max_size=5))
def test_any_input_gives_valid_unique_names(protocol, names, reserved):
    out = allocate(names, protocol, reserved)
    assert len(out) == len(names)
    assert_valid_and_unique(out, protocol)
    reserved_keys = {sanitize(r, protocol).casefold() for r in reserved}
    assert not reserved_keys & {n.casefold() for n in out}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_bfcl_corpus_names_are_valid_and_unique(protocol):
    names = [fn["name"] for fn in bfcl_functions()]
    assert len(names) >= 1700
    assert sum("." in n for n in names) >= 770
    out = allocate(names, protocol)
    assert_valid_and_unique(out, protocol)
    # Dots become underscores; collisions (`a.b` vs `a_b`) get a suffix rather than being merged.
    for raw, got in zip(names, out, strict=True):
        if protocol in ("openai", "anthropic", "mistral") and re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", raw):
            assert got.split("__")[0] == raw.replace(".", "_").split("__")[0]


def test_the_safe_core_passes_every_protocol():
    for name in allocate(["a", "Z9_x", "tool_" * 12], "bedrock"):
        assert SAFE_CORE.match(name)
        for rule in RULES.values():
            assert rule.is_valid(name)
