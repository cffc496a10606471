"""Deferred loading over a real catalog: builtins, BFCL extension tools and a real MCP server
process with 200 tools; records and replay keep what the model sent and what ran."""

import hashlib
import json

import pytest

import tooldeck
from tests.corpus import bfcl_functions
from tests.deferred.catalog import EXTENSIONS, _schema
from tests.deferred.test_deferred import FIXED
from tests.mcp.conftest import fixture_server, write_mcp_json
from tooldeck.protocols import validate
from tooldeck.records.replay import replay_all

FIXTURE_OWN_TOOLS = 15


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    write_mcp_json(home, {"fixture": fixture_server("--extra-tools", str(200 - FIXTURE_OWN_TOOLS))})
    runtime = tooldeck.Runtime(home, profile={"loading": "deferred"})
    for fn in list(bfcl_functions())[EXTENSIONS]:
        runtime.extensions.register(lambda **kw: "ok", "bfcl", fn["name"], description=fn.get("description") or "x",
                                    input_schema=_schema(fn), blocking=False)
    yield runtime
    runtime.close()


def test_300_tools_behind_a_fixed_array(rt):
    inv = rt.invocation()
    mcp = [b for b in inv.snapshot.bindings if b.tool_id.startswith("mcp/")]
    assert len(mcp) == 200
    assert len(inv.snapshot.bindings) >= 300
    assert [t["function"]["name"] for t in inv.tools()] == ["find_tools", "run_tool", *FIXED]
    context = inv.turn_context()
    assert context.count("mcp__fixture__") == 1 and "mcp__fixture__{add, " in context
    assert "extra_185" not in context and "extra_184" in context


def test_the_array_hash_holds_across_10_turns_while_tools_come_and_go(rt):
    digests, contexts = set(), set()
    for turn in range(10):
        name = f"churn_{turn}"
        rt.extensions.register(lambda: "x", "churn", name, description=f"Churn {turn}.")
        if turn:
            rt.extensions.unregister(f"extension/churn:churn_{turn - 1}")
        inv = rt.invocation(run_id="turns")
        digests.add(hashlib.sha256(json.dumps(inv.tools()).encode()).hexdigest())
        contexts.add(inv.turn_context())
    rt.extensions.unregister("extension/churn:churn_9")
    assert len(digests) == 1 and len(contexts) == 10


def test_a_proxied_mcp_tool_runs_through_find_tools_then_run_tool_and_replays(rt):
    inv = rt.invocation(run_id="mcp-run")
    [found] = inv.run([{"id": "f1", "name": "find_tools", "arguments": {"query": "add two integers"}}])
    assert json.loads(found.content.split("\n", 1)[1])["tools"][0]["name"] == "mcp__fixture__add"
    wrapped = '{"name": "mcp__fixture__add", "args": {"a": 2, "b": 40}}'
    [ran] = inv.run([{"id": "r1", "name": "run_tool", "arguments": wrapped}])
    assert ran.content == "42" and ran.tool_id.startswith("mcp/") and ran.tool_id.endswith(":add")
    calls = {c.call_id: c for c in rt.recorder.history(inv.id).calls}
    assert calls["r1"].call_name == "run_tool" and calls["r1"].raw_arguments == wrapped
    assert calls["r1"].tool_id == ran.tool_id and calls["r1"].arguments == {"a": 2, "b": 40}
    for provider, messages in replay_all(rt.recorder, inv.id).items():
        assert validate(messages, provider) == [], provider
        assert "run_tool" in json.dumps(messages)
