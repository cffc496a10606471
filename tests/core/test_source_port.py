"""The `ToolSource` port's lifecycle (issue 18.1): every source gets the gate hook and `close()` through
the port, no source is special-cased by the runtime, and an incomplete source is refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tooldeck.catalog.sources import Executable, StaticSource
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.gate import GateTable

SCHEMA = {"type": "object", "properties": {}}


class Scripts(StaticSource):
    """A script source whose `echo` tool asks first, that explains its missing names, and counts closes."""

    def __init__(self) -> None:
        super().__init__("script")
        self.add(ToolDescriptor(ToolId.parse("script/demo:echo"), "Echo.", SCHEMA), Executable(lambda a, c: "echoed"))
        self.add(ToolDescriptor(ToolId.parse("script/demo:plain"), "Plain.", SCHEMA), Executable(lambda a, c: "plain"))
        self.closed = 0
        self.tables: list[GateTable] = []

    def prepare_gate(self, table: GateTable) -> None:
        self.tables.append(table)
        for entry in table.entries.values():
            if entry.tool_id == "script/demo:echo":
                entry.permission = "ask"
        table.explain_unknown.append(lambda name: "the demo scripts folder is being rescanned"
                                     if name.startswith("demo_") else None)

    def close(self) -> None:
        self.closed += 1


def _call(name: str) -> dict[str, Any]:
    return {"id": "c1", "name": name, "arguments": "{}"}


def test_the_gate_hook_runs_once_per_table_and_shapes_the_gate(tmp_path: Path) -> None:
    source = Scripts()
    asked: list[str] = []
    with tooldeck.Runtime(tmp_path, records=False, sources=[source],
                          confirm=lambda req: asked.append(req.tool_id) is None) as rt:
        inv = rt.invocation()
        names = {tid: name for name, tid in inv.call_names().items()}
        [echo] = inv.run([_call(names["script/demo:echo"])])
        [plain] = inv.run([{**_call(names["script/demo:plain"]), "id": "c2"}])
        [missing] = inv.run([{**_call("demo_gone"), "id": "c3"}])
        rt.invocation()
        assert echo.content == "echoed" and plain.content == "plain"
        assert asked == ["script/demo:echo"]  # only the tool the source turned to `ask`
        assert missing.error_code == "tool.unknown_tool"
        assert "the demo scripts folder is being rescanned" in missing.content
        assert all(t is not None for t in source.tables)
        assert len(source.tables) == len({id(t) for t in source.tables})
    assert source.closed == 1


def test_close_reaches_every_source_once(tmp_path: Path) -> None:
    source = Scripts()
    rt = tooldeck.Runtime(tmp_path, records=False, sources=[source])
    rt.close()
    assert source.closed == 1


def test_a_source_that_misses_part_of_the_port_is_refused_by_name(tmp_path: Path) -> None:
    class Partial:
        kind = "script"

        def descriptors(self) -> list[object]:
            return []

        def diagnostics(self) -> list[object]:
            return []

        def resolve(self, tool_id: object) -> None:
            return None

    with pytest.raises(tooldeck.TooldeckError) as err:
        tooldeck.Runtime(tmp_path, records=False, sources=[Partial()])
    assert err.value.code == "catalog.source_incomplete"
    assert "prepare_gate, close" in str(err.value) and "subclass tooldeck.ToolSource" in str(err.value)

    class Complete(Partial, tooldeck.ToolSource):  # the port's no-op prepare_gate and close
        pass

    with tooldeck.Runtime(tmp_path, records=False, sources=[Complete()]) as rt:
        assert rt.catalog.source("script") is not None
