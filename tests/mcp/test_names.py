"""Names mode and aliases: the `[mcp] names` key and mcp.json `alias` are checked at load, and the call names
that `prepare` gives MCP tools follow the rule for any set of upstream names (hypothesis)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.builtins import default_builtins, meta
from tooldeck.builtins.registry import builtin_source
from tooldeck.catalog.bindings import ALWAYS_RESERVED, prepare
from tooldeck.catalog.catalog import Catalog
from tooldeck.catalog.profile import Profile
from tooldeck.catalog.sources import StaticSource
from tooldeck.core.descriptors import AvailabilityContext
from tooldeck.core.ids import ToolId
from tooldeck.naming import mcp_model_name, rule_for
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.servers import descriptor

from .conftest import write_mcp_json, write_toml

SERVER = {"command": "srv"}


def test_names_key_and_alias_load(tmp_path: Path) -> None:
    write_toml(tmp_path, '[mcp]\nnames = "original"\n')
    write_mcp_json(tmp_path, {"github": {**SERVER, "alias": "gh"}, "time": SERVER})
    config = cfg.load(tmp_path)
    assert config is not None and config.names == "original"
    assert config.servers["github"].label == "gh" and config.servers["time"].label == "time"
    write_toml(tmp_path, "[mcp]\n")
    assert cfg.load(tmp_path).names == "prefixed"  # type: ignore[union-attr]


@pytest.mark.parametrize("value", ['"short"', '"Original"', "1", "true", '""'])
def test_a_bad_names_mode_is_refused_naming_the_key(tmp_path: Path, value: str) -> None:
    write_toml(tmp_path, f"[mcp]\nnames = {value}\n")
    with pytest.raises(McpConfigError) as err:
        cfg.load(tmp_path)
    assert err.value.code == "mcp.config_invalid" and "`mcp.names`" in err.value.message
    assert "prefixed" in err.value.message and "original" in err.value.message


@pytest.mark.parametrize("alias", ["", "g h", "gh_", "-gh", "gh-", "g__h", "g.h", "x" * 21, "ünï"])
def test_a_bad_alias_is_refused_naming_the_key(tmp_path: Path, alias: str) -> None:
    write_mcp_json(tmp_path, {"github": {**SERVER, "alias": alias}})
    with pytest.raises(McpConfigError) as err:
        cfg.load(tmp_path)
    assert err.value.code == "mcp.config_invalid" and "`mcpServers.github.alias`" in err.value.message


@pytest.mark.parametrize(("servers", "clash"), [
    ({"a": {**SERVER, "alias": "gh"}, "b": {**SERVER, "alias": "GH"}}, "a"),
    ({"a": {**SERVER, "alias": "time"}, "time": SERVER}, "a"),
    ({"my-srv": SERVER, "z": {**SERVER, "alias": "my-srv"}}, "z"),
])
def test_an_alias_that_repeats_another_server_is_refused(tmp_path: Path, servers: dict[str, Any], clash: str) -> None:
    write_mcp_json(tmp_path, servers)
    with pytest.raises(McpConfigError) as err:
        cfg.load(tmp_path)
    assert err.value.code == "mcp.config_invalid" and "pick another alias" in err.value.message


# -- the naming rule, for any upstream names ----------------------------------------------------------------------

_NAMES = st.sampled_from(["echo", "Echo", "add", "dice_roll", "run_tool", "find_tools", "task_return", "get.data",
                          "a-b", "a_b", "mcp__fb__echo", "x" * 70, "weather", "Weather2"]) \
    | st.text(st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=1, max_size=12)


def _call_names(fa: list[str], fb: list[str], original: bool) -> tuple[dict[str, str], set[str]]:
    mcp = StaticSource("mcp")
    for rid, server, tools in (("r1", "fa", fa), ("r2", "fb", fb)):
        for name in tools:
            tool = {"name": name, "inputSchema": {"type": "object"}}
            mcp.add(descriptor(ToolId.mcp(rid, name), server, tool, None, original), None)  # type: ignore[arg-type]
    catalog = Catalog([builtin_source([*meta.TOOLS, *default_builtins()]), mcp])
    ctx = AvailabilityContext(scene="session", headless=True, provider="openai", run_id="r")
    bindings = prepare(catalog, Profile(), ctx, "openai").bindings
    others = {b.call_name.casefold() for b in bindings if b.descriptor.id.kind != "mcp"}
    return {b.tool_id: b.call_name for b in bindings if b.descriptor.id.kind == "mcp"}, others


@settings(derandomize=True, max_examples=200, deadline=None)
@given(fa=st.lists(_NAMES, max_size=6, unique=True), fb=st.lists(_NAMES, max_size=6, unique=True),
       original=st.booleans())
def test_original_names_where_unique_prefixed_on_a_clash(fa: list[str], fb: list[str], original: bool) -> None:
    names, others = _call_names(fa, fb, original)
    rule = rule_for("openai")
    everything = [*names.values(), *others]
    assert all(rule.is_valid(n) for n in names.values())
    assert len({n.casefold() for n in everything}) == len(everything)  # unique, case-insensitively
    upstream = [*fa, *fb]
    prefixed = {mcp_model_name(s, t).casefold() for s, tools in (("fa", fa), ("fb", fb)) for t in tools}
    taken = others | set(ALWAYS_RESERVED)
    for server, rid, tools in (("fa", "r1", fa), ("fb", "r2", fb)):
        for tool in tools:
            call = names[f"mcp/{rid}:{tool}"]
            own = mcp_model_name(server, tool)
            keeps = (original and rule.is_valid(tool) and sum(u.casefold() == tool.casefold() for u in upstream) == 1
                     and tool.casefold() not in taken and tool.casefold() not in prefixed)
            if keeps:
                assert call == tool
            else:
                clash = re.fullmatch(r"(.+)__(\d+)", call)  # a second tool with the same prefixed name: `__2`
                assert call == own or (clash is not None and own.startswith(clash.group(1))), (call, own)
