import asyncio
from typing import Literal

import pydantic
import pytest

import tooldeck
from tests.core.helpers import builtin
from tooldeck.core.results import ToolOutput


class Point(pydantic.BaseModel):
    x: int
    y: int


def test_schema_from_type_hints_and_docstring(make_runtime):
    rt = make_runtime(builtins=[])

    @rt.tool(extension_id="geo")
    def move(p: Point, dx: int = 0, unit: Literal["m", "km"] = "m") -> dict:
        """Move a point.

        Args:
            p: The point to move.
            dx: How far along x.
        """
        return {"x": p.x + dx, "y": p.y, "unit": unit}

    inv = rt.invocation()
    [tool] = inv.tools()
    params = tool["function"]["parameters"]
    assert tool["function"]["description"] == "Move a point."
    assert params["required"] == ["p"]
    assert params["properties"]["dx"]["description"] == "How far along x."
    assert params["properties"]["unit"]["enum"] == ["m", "km"]
    [r] = inv.run([{"id": "1", "name": "move", "arguments": '{"p": {"x": 1, "y": 2}, "dx": 3}'}])
    assert r.structured == {"x": 4, "y": 2, "unit": "m"}
    assert r.content == '{"x":4,"y":2,"unit":"m"}'


def test_colliding_extension_names_never_replace_builtins(make_runtime):
    rt = make_runtime(builtins=[builtin("workspace.write_file", lambda a, c: ToolOutput("builtin"))],
                      allow=["builtin:*", "extension/*"])
    rt.extensions.register(lambda: "a", "ext-a", "inspect", description="A")
    rt.extensions.register(lambda: "b", "ext-b", "inspect", description="B")
    rt.extensions.register(lambda: "ext", "ext-c", "workspace_write_file", description="C")
    inv = rt.invocation()
    assert inv.call_names() == {
        "workspace_write_file": "builtin:workspace.write_file",
        "inspect": "extension/ext-a:inspect",
        "inspect__2": "extension/ext-b:inspect",
        "workspace_write_file__2": "extension/ext-c:workspace_write_file",
    }
    results = inv.run([{"id": str(i), "name": n} for i, n in enumerate(
        ["inspect", "inspect__2", "workspace_write_file", "workspace_write_file__2"])])
    assert [r.content for r in results] == ["a", "b", "builtin", "ext"]
    names = inv.call_names()
    order = ["inspect", "inspect__2", "workspace_write_file", "workspace_write_file__2"]
    assert [r.tool_id for r in results] == [names[n] for n in order]


def test_unregistered_or_disabled_since_the_snapshot_is_unavailable_and_nothing_runs(make_runtime):
    rt = make_runtime(builtins=[])
    ran = []
    tid = rt.extensions.register(lambda: ran.append(1) or "ok", "ext", "act", description="Act.")
    inv = rt.invocation()
    rt.extensions.set_enabled(tid, False)
    [r] = inv.run([{"id": "1", "name": "act"}])
    assert r.error_code == "tool.unavailable" and "No action was taken" in r.content
    rt.extensions.set_enabled(tid, True)
    assert inv.run([{"id": "2", "name": "act"}])[0].content == "ok"
    rt.extensions.unregister(tid)
    assert inv.run([{"id": "3", "name": "act"}])[0].error_code == "tool.unavailable"
    assert ran == [1]
    assert "act" not in rt.invocation().call_names()


def test_scenes_enable_and_explicit_schema(make_runtime):
    rt = make_runtime(builtins=[])

    @rt.tool(extension_id="ext", scenes=["session"],
             input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
             description="Search.")
    async def search(q: str) -> str:
        await asyncio.sleep(0)
        return f"found {q}"

    assert rt.invocation(scene="chat").call_names() == {}
    inv = rt.invocation(scene="session")
    assert inv.run([{"id": "1", "name": "search", "arguments": {"q": "x"}}])[0].content == "found x"


def test_registration_errors(make_runtime):
    rt = make_runtime(builtins=[])
    rt.extensions.register(lambda: 1, "ext", "one", description="One.")
    with pytest.raises(tooldeck.TooldeckError) as err:
        rt.extensions.register(lambda: 1, "ext", "one", description="One.")
    assert err.value.code == "extension.tool_already_registered"
    with pytest.raises(tooldeck.TooldeckError) as err:
        rt.extensions.register(lambda: 1, "ext", "two", input_schema={"type": "array"}, description="x")
    assert err.value.code == "extension.tool_schema_invalid"
    with pytest.raises(tooldeck.TooldeckError):
        rt.extensions.register(lambda: 1, "ext", "three", scenes=[], description="x")
    with pytest.raises(tooldeck.TooldeckError):
        rt.extensions.register(lambda: 1, "", "four", description="x")


@pytest.mark.parametrize("records", [False, True])
def test_plain_return_values_become_text_the_same_way_on_every_path(make_runtime, records):
    rt = make_runtime(builtins=[], records=records, allow=["extension/*"])

    @rt.tool(extension_id="vals")
    def value(kind: str) -> object:
        """Return a value of the given kind."""
        return {"text": "plain text", "int": 42, "bool": True, "none": None, "model": Point(x=1, y=2),
                "huge": 10**5000, "list": [1, "a"]}[kind]

    inv = rt.invocation()
    kinds = ["text", "int", "bool", "none", "model", "huge", "list"]
    singles = [inv.run([{"id": k, "name": "value", "arguments": {"kind": k}}])[0] for k in kinds]
    batch = inv.run([{"id": k, "name": "value", "arguments": {"kind": k}} for k in kinds])
    for results in (singles, batch):
        got = {r.call_id: (r.content, r.structured, r.is_error) for r in results}
        assert got["text"] == ("plain text", None, False)
        assert got["int"] == ("42", 42, False)
        assert got["bool"] == ("true", True, False)
        assert got["none"] == ("null", None, False)
        assert got["model"] == ('{"x":1,"y":2}', {"x": 1, "y": 2}, False)
        assert got["list"] == ('[1,"a"]', [1, "a"], False)
        content, structured, is_error = got["huge"]
        assert not is_error and structured == 10**5000 and "too long to show" in content
