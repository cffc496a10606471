import json

import pytest

from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.errors import SnapshotError
from tooldeck.core.ids import ToolId
from tooldeck.snapshot.snapshot import Binding, Snapshot


def d(tid: str) -> ToolDescriptor:
    return ToolDescriptor(ToolId.parse(tid), f"desc {tid}", {"type": "object", "properties": {"x": {"type": "string"}}})


def make(**kw) -> Snapshot:
    bindings = kw.pop("bindings", [Binding(d("builtin:b.two"), "b_two"), Binding(d("builtin:a.one"), "a_one", 3)])
    return Snapshot.build("openai", bindings, kw.pop("budget", 80), **kw)


def test_round_trip_preserves_binding_order_names_budget_and_tools():
    snap = make()
    data = json.loads(snap.to_json())
    assert data["schema_version"] == 1
    assert data["bindings"][0]["call_name"] == "b_two"
    again = Snapshot.from_json(snap.to_json())
    assert [b.call_name for b in again.bindings] == ["b_two", "a_one"]
    assert [b.max_calls for b in again.bindings] == [None, 3]
    assert again.tools == snap.tools
    assert again.to_json() == snap.to_json()


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda s: s.update(schema_version=2), "tool.snapshot_schema_unsupported"),
        (lambda s: s.update(id=""), "tool.snapshot_id_empty"),
        (lambda s: s.update(max_calls_per_invocation=0), "tool.snapshot_budget_invalid"),
        (lambda s: s["bindings"][0].update(call_name=""), "tool.snapshot_alias_empty"),
        (lambda s: s["bindings"][0].update(max_calls=0), "tool.snapshot_tool_budget_invalid"),
        (lambda s: s["bindings"][1].update(call_name="b_two"), "tool.snapshot_duplicate_alias"),
        (lambda s: s["bindings"][1].update(call_name="B_TWO"), "tool.snapshot_duplicate_alias"),
        (lambda s: s["bindings"][1]["descriptor"].update(id="builtin:b.two"), "tool.snapshot_duplicate_id"),
        (lambda s: s.update(surprise=1), "tool.snapshot_schema_unsupported"),
        (lambda s: s.update(loading="lazy"), "tool.snapshot_loading_invalid"),
    ],
)
def test_restore_rejects_invalid_snapshots(mutate, code):
    data = json.loads(make().to_json())
    mutate(data)
    with pytest.raises(SnapshotError) as err:
        Snapshot.from_json(json.dumps(data))
    assert err.value.code == code


def test_restore_rejects_non_json_and_bad_ids():
    with pytest.raises(SnapshotError):
        Snapshot.from_json("{")
    data = json.loads(make().to_json())
    data["bindings"][0]["descriptor"]["id"] = "builtin"
    with pytest.raises(ValueError):
        Snapshot.from_json(json.dumps(data))


def test_build_validates_too():
    with pytest.raises(SnapshotError):
        make(bindings=[Binding(d("builtin:a"), "x"), Binding(d("builtin:b"), "x")])
    with pytest.raises(SnapshotError):
        make(budget=0)
