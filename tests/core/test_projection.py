import json

import tooldeck
from tests.core.helpers import builtin
from tooldeck.core.results import ToolOutput


def big(args, ctx):
    # One very long line plus short lines, so hard-wrapping is visible.
    return ToolOutput("A" * 150_000 + "\n" + "\n".join(f"line {i}" for i in range(5_000)), structured={"k": 1},
                      raw={"raw": True})


def runtime(tmp_path, with_readers: bool):
    tools = [builtin("big.result", big)]
    if with_readers:
        tools += [builtin("workspace.read_file", big), builtin("workspace.search_files", big)]
    return tooldeck.Runtime(tmp_path, builtins=tools, profile={"allow": ["builtin:*", "extension/*"]})


def test_extension_result_over_the_limit_spills_to_a_line_addressable_file(tmp_path):
    rt = runtime(tmp_path, with_readers=False)

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


def test_guidance_names_the_reading_tools_present_in_the_snapshot(tmp_path):
    inv = runtime(tmp_path, with_readers=True).invocation()
    [r] = inv.run([{"id": "c", "name": "big_result"}])
    assert "Use `workspace_read_file` with this path" in r.content
    assert "Use `workspace_search_files` on the same path" in r.content
    assert len(r.content) < 4_000


def test_small_results_stay_inline_and_limits_come_from_the_profile(tmp_path):
    rt = tooldeck.Runtime(tmp_path, builtins=[builtin("big.result", big)],
                          profile={"allow": ["extension/*"], "result_inline_limit": 10, "preview_chars": 5})

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
