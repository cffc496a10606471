"""What the model is shown: call names, parameters, annotations and descriptions of the workspace tools."""

from __future__ import annotations

import tooldeck
from tests.workspace.conftest import Model

NAMES = ["list_files", "search_files", "read_file", "write_file", "apply_patch", "remove_file", "restore_file",
         "commit", "finish"]


def tools_by_name(runtime: tooldeck.Runtime) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in runtime.invocation().tools()}


def test_default_profile_exposes_every_workspace_tool_under_its_builtin_name(runtime: tooldeck.Runtime) -> None:
    tools = tools_by_name(runtime)
    for name in NAMES:
        assert f"workspace_{name}" in tools
    params = {n: set(tools[f"workspace_{n}"]["parameters"]["properties"]) for n in NAMES}
    assert params["read_file"] == {"path", "start_line", "line_count"}
    assert params["search_files"] == {"pattern", "path"}
    assert params["list_files"] == {"path", "depth"}
    assert params["write_file"] == {"path", "content", "mode"}
    assert params["apply_patch"] == {"path", "old_string", "new_string", "replace_all"}
    assert params["restore_file"] == {"path", "version"}
    assert params["commit"] == {"path", "mode", "reason"}
    assert params["finish"] == {"reason"}


def test_descriptions_state_roots_and_body_path(runtime: tooldeck.Runtime) -> None:
    tools = tools_by_name(runtime)
    for name in NAMES[:-1]:
        text = tools[f"workspace_{name}"]["description"]
        assert "output/main.md" in text, name
    for name in ("list_files", "read_file", "write_file"):
        text = tools[f"workspace_{name}"]["description"]
        for root in ("output/", "scratch/", "plan/", "summaries/", "persist/", "tool-results/", "skills/"):
            assert root in text, (name, root)


def test_annotations(runtime: tooldeck.Runtime) -> None:
    inv = runtime.invocation()
    ann = {b.call_name: b.descriptor.annotations for b in inv.snapshot.bindings}
    for name in ("list_files", "search_files", "read_file"):
        a = ann[f"workspace_{name}"]
        assert a.read_only and a.concurrency_safe and not a.mutating
    for name in ("write_file", "apply_patch", "remove_file", "restore_file"):
        a = ann[f"workspace_{name}"]
        assert a.mutating and not a.read_only and not a.concurrency_safe
    assert ann["workspace_commit"].control and ann["workspace_finish"].control


def test_parallel_reads_come_back_in_call_order(model: Model) -> None:
    for i in range(6):
        model.ok("write_file", path=f"scratch/{i}.txt", content=f"file {i}\n")
    results = model.turn(*[("read_file", {"path": f"scratch/{i}.txt"}) for i in range(6)],
                         ("search_files", {"pattern": "file 3"}), ("list_files", {"path": "scratch"}))
    assert [r.structured["path"] for r in results[:6]] == [f"scratch/{i}.txt" for i in range(6)]
    assert results[6].structured["total"] == 1 and not results[7].is_error
