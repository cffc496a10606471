"""Snapshot reuse (issue 13.2): a snapshot's identity is the content it freezes, so invocations over an
unchanged catalog share it (and its gate table, search index and JSON), while anything that changes
what the model would see builds a new one. Invocations keep their own ids, budgets and records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tooldeck.catalog.sources import Diagnostic, Executable, StaticSource
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import ToolId

SCHEMA = {"type": "object", "properties": {}}


class Flaky(StaticSource):
    """A script source whose diagnostics change without its tools changing, and whose `gated` tool is
    available only while `open` is set."""

    def __init__(self) -> None:
        super().__init__("script")
        self.open = True
        self.notes: list[str] = []
        self.add(ToolDescriptor(ToolId.parse("script/demo:plain"), "Plain.", SCHEMA), Executable(lambda a, c: "p"))
        self.add(ToolDescriptor(ToolId.parse("script/demo:gated"), "Gated.", SCHEMA,
                                available=lambda ctx: self.open), Executable(lambda a, c: "g"))

    def diagnostics(self) -> list[Diagnostic]:
        return [Diagnostic("script.note", note) for note in self.notes]


def _runtime(home: Path, **options: Any) -> tooldeck.Runtime:
    rt = tooldeck.Runtime(home, sources=[Flaky()], **options)

    @rt.tool("ext")
    def hello(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    return rt


def test_an_unchanged_catalog_reuses_the_snapshot_and_what_was_built_for_it(tmp_path: Path) -> None:
    with _runtime(tmp_path, profile={"loading": "deferred"}) as rt:
        first, second = rt.invocation(run_id="a"), rt.invocation(run_id="b")
        assert second.snapshot is first.snapshot
        assert second.tools() is first.tools() and isinstance(first.tools(), tuple)
        assert second.gate.entries is first.gate.entries  # the gate table, compiled validators included
        assert second.deferred_catalog() is first.deferred_catalog()
        assert first.id != second.id  # only the snapshot is shared
        [found] = second.run([{"id": "f", "name": "find_tools", "arguments": {"names": ["hello"]}}])
        assert not found.is_error and '"hello"' in found.content
        history = [rt.recorder.history(inv.id).summary for inv in (first, second)]  # type: ignore[attr-defined]
        assert [h.invocation_id for h in history] == [first.id, second.id]
        assert {h.snapshot_id for h in history} == {first.snapshot.id}


def test_a_profile_of_equal_content_is_the_same_snapshot_and_another_is_not(tmp_path: Path) -> None:
    with _runtime(tmp_path, records=False) as rt:
        a = rt.invocation(profile={"max_calls_per_invocation": 7})
        b = rt.invocation(profile={"max_calls_per_invocation": 7})  # a new Profile object, equal content
        c = rt.invocation(profile={"max_calls_per_invocation": 8})
        assert b.snapshot is a.snapshot
        assert c.snapshot.id != a.snapshot.id and c.snapshot.max_calls_per_invocation == 8


@pytest.mark.parametrize("change", ["register", "unregister", "disable", "provider", "scene", "headless",
                                    "condition", "source"])
def test_what_the_model_would_see_differently_builds_a_new_snapshot(tmp_path: Path, change: str) -> None:
    with _runtime(tmp_path, records=False) as rt:
        before = rt.invocation()
        options: dict[str, Any] = {}
        source = rt.catalog.source("script")
        assert isinstance(source, Flaky)
        if change == "register":
            rt.extensions.register(lambda: "x", "ext", "later", description="Later.")
        elif change == "unregister":
            rt.extensions.unregister("extension/ext:hello")
        elif change == "disable":
            rt.extensions.set_enabled("extension/ext:hello", False)
        elif change == "provider":
            options["provider"] = "anthropic"
        elif change == "scene":
            options["scene"] = "session"
        elif change == "headless":
            options["headless"] = True
        elif change == "condition":
            source.open = False
        else:
            source.add(ToolDescriptor(ToolId.parse("script/demo:new"), "New.", SCHEMA), Executable(lambda a, c: "n"))
        after = rt.invocation(**options)
        assert after.snapshot.id != before.snapshot.id
        names = set(after.call_names())
        if change == "register":
            assert "later" in names
        elif change in ("unregister", "disable"):
            assert "hello" not in names
        elif change == "condition":
            assert "gated" not in names and "gated" in before.call_names()
        elif change == "source":
            assert "new" in names
        again = rt.invocation(**options)
        assert again.snapshot is after.snapshot  # and from then on it is reused


def test_the_sources_diagnostics_are_read_afresh_for_a_reused_snapshot(tmp_path: Path) -> None:
    with _runtime(tmp_path, records=False, profile={"allow": ["builtin:*", "extension/*", "script/*",
                                                             "script/demo:missing"]}) as rt:
        source = rt.catalog.source("script")
        assert isinstance(source, Flaky)
        first = rt.invocation()
        source.notes.append("rescanning")
        second = rt.invocation()
        assert second.snapshot is first.snapshot
        codes = [d.code for d in second.diagnostics]
        assert codes == ["script.note", "tool.not_in_catalog"]  # the source's now, then what preparing said
        assert [d.code for d in first.diagnostics] == ["tool.not_in_catalog"]


def test_invocations_sharing_a_snapshot_keep_their_own_budget_and_rounds(tmp_path: Path) -> None:
    with _runtime(tmp_path, profile={"max_calls_per_invocation": 1}) as rt:
        first = rt.invocation(run_id="r")
        call = {"id": "1", "name": "hello", "arguments": {"name": "a"}}
        assert first.run([call])[0].content == "hello a"
        assert first.run([{**call, "id": "2"}])[0].error_code == "tool.budget_exhausted"
        second = rt.invocation(run_id="r")
        assert second.snapshot is first.snapshot
        assert second.run([call])[0].content == "hello a"  # a fresh budget, round 1 again
        assert second.round == 1 and first.round == 2
        resumed = rt.resume(first.id)
        assert resumed.run([{**call, "id": "3"}])[0].error_code == "tool.budget_exhausted"
        assert rt.resume(second.id).run([{**call, "id": "4"}])[0].error_code == "tool.budget_exhausted"


def test_the_shared_tools_array_is_immutable_at_the_top(tmp_path: Path) -> None:
    with _runtime(tmp_path, records=False) as rt:
        tools = rt.invocation().tools()
        with pytest.raises(AttributeError):
            tools.append({})  # type: ignore[attr-defined]
        assert rt.invocation().tools() == tools
