import json
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.core.helpers import builtin
from tooldeck.core.results import ToolOutput


def big(args, ctx):
    # One very long line plus short lines, so hard-wrapping is visible.
    return ToolOutput("A" * 150_000 + "\n" + "\n".join(f"line {i}" for i in range(5_000)), structured={"k": 1},
                      raw={"raw": True})


def runtime(make_runtime: MakeRuntime, with_readers: bool) -> tooldeck.Runtime:
    tools = [builtin("big.result", big)]
    if with_readers:
        tools += [builtin("workspace.read_file", big), builtin("workspace.search_files", big)]
    return make_runtime(builtins=tools, allow=["builtin:*", "extension/*"])


def test_extension_result_over_the_limit_spills_to_a_line_addressable_file(make_runtime, tmp_path):
    rt = runtime(make_runtime, with_readers=False)

    @rt.tool(extension_id="ext")
    def huge() -> str:
        """Return 200,000 characters."""
        return "x" * 200_000

    inv = rt.invocation(run_id="r1")
    [r] = inv.run([{"id": "call-1", "name": "huge"}])
    assert not r.is_error
    assert r.structured["externalized"] is True and r.structured["char_count"] == 200_000
    path = r.structured["path"]
    assert path.startswith(f"tool-results/{inv.id}/round-001-call_") and path.endswith(".txt")
    text = (tmp_path / "workspaces" / "r1" / path).read_text()
    assert text.replace("\n", "") == "x" * 200_000
    assert max(len(line) for line in text.split("\n")) == 3_000
    audit = json.loads((tmp_path / "workspaces" / "r1" / r.structured["audit_path"]).read_text())
    assert audit["raw"] == "x" * 200_000
    assert f"({200_000} characters)" in r.content and f"`{path}`" in r.content
    preview = r.content.split("this is not the complete result.\n\n", 1)[1]
    assert preview == "x" * 3_000
    assert "Use `" not in r.content
    assert r.structured["audit_path"] not in r.content
    assert path in r.resource_refs


def test_guidance_names_the_reading_tools_present_in_the_snapshot(make_runtime):
    inv = runtime(make_runtime, with_readers=True).invocation()
    [r] = inv.run([{"id": "c", "name": "big_result"}])
    assert "Use `workspace_read_file` with this path" in r.content
    assert "Use `workspace_search_files` on the same path" in r.content
    assert len(r.content) < 4_000


def test_small_results_stay_inline_and_limits_come_from_the_profile(make_runtime):
    rt = make_runtime(builtins=[builtin("big.result", big)], allow=["extension/*"], result_inline_limit=10,
                      preview_chars=5)

    @rt.tool(extension_id="ext")
    def small() -> str:
        """Short."""
        return "0123456789"

    @rt.tool(extension_id="ext")
    def longer() -> str:
        """Longer."""
        return "0123456789X"

    inv = rt.invocation()
    r1, r2, r3 = inv.run([{"id": "a", "name": "small"}, {"id": "b", "name": "longer"}, {"id": "b", "name": "longer"}])
    assert r1.content == "0123456789" and r1.structured is None
    assert r2.content.endswith("\n01234") and r2.structured["char_limit"] == 10
    assert r3.structured["path"] != r2.structured["path"]


LIMIT = 40


def _dict_of_length(n: int) -> dict[str, Any]:
    value = {"k": "d" * (n - len('{"k":""}'))}
    assert len(json.dumps(value, separators=(",", ":"))) == n
    return value


@pytest.mark.parametrize("shape", ["tool_output", "dict"])
def test_a_result_of_exactly_the_inline_limit_stays_inline_and_one_more_character_spills(make_runtime, tmp_path,
                                                                                         shape):
    """The boundary on the ToolOutput and plain-value paths (the plain-string fast path has its own test)."""
    def exact(args, ctx):
        n = LIMIT + args.get("extra", 0)
        if shape == "dict":
            return _dict_of_length(n)
        return ToolOutput("t" * n, structured={"n": n}, resource_refs=["output/ref.txt"])

    schema = {"type": "object", "properties": {"extra": {"type": "integer"}}}
    rt = make_runtime(builtins=[builtin("exact", exact, schema)], allow=["builtin:*"],
                      result_inline_limit=LIMIT, preview_chars=5)
    inv = rt.invocation(run_id="edge")
    at, over = inv.run([{"id": "at", "name": "exact", "arguments": {}},
                        {"id": "over", "name": "exact", "arguments": {"extra": 1}}])
    if shape == "dict":
        assert at.content == json.dumps(_dict_of_length(LIMIT), separators=(",", ":"))
        assert at.structured == _dict_of_length(LIMIT) and at.resource_refs == []
        over_text = json.dumps(_dict_of_length(LIMIT + 1), separators=(",", ":"))
    else:
        assert at.content == "t" * LIMIT
        assert at.structured == {"n": LIMIT} and at.resource_refs == ["output/ref.txt"]
        over_text = "t" * (LIMIT + 1)
    assert len(at.content) == LIMIT and not at.is_error

    assert not over.is_error and over.structured["externalized"] is True
    assert over.structured["char_count"] == LIMIT + 1 and over.structured["char_limit"] == LIMIT
    path = over.structured["path"]
    assert path.startswith(f"tool-results/{inv.id}/")
    assert (tmp_path / "workspaces" / "edge" / path).read_text() == over_text
    assert over.content.endswith("\n" + over_text[:5])
    spilled = sorted(p.name for p in (tmp_path / "workspaces" / "edge" / "tool-results" / inv.id).iterdir())
    assert spilled == [Path(over.structured["audit_path"]).name, Path(path).name], "the inline result spilled too"
