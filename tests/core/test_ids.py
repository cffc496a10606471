import pytest

from tooldeck.core.errors import ToolIdError
from tooldeck.core.ids import ToolId


@pytest.mark.parametrize("text", ["", "builtin", ":tool", "builtin:"])
def test_rejects_invalid_serialized_values(text):
    with pytest.raises(ToolIdError):
        ToolId.parse(text)


def test_rejects_provider_with_colon():
    with pytest.raises(ToolIdError) as err:
        ToolId("mcp/a:b", "x")
    assert err.value.code == "tool.provider_id_invalid"
    with pytest.raises(ToolIdError):
        ToolId.mcp("reg:1", "x")


def test_parse_splits_at_the_first_colon_and_keeps_dots_and_colons_in_the_name():
    tid = ToolId.parse("mcp/r1:ns:tool.read")
    assert tid.provider == "mcp/r1"
    assert tid.name == "ns:tool.read"
    assert tid.kind == "mcp"
    assert tid.source_id == "r1"
    assert str(tid) == "mcp/r1:ns:tool.read"


def test_ids_are_stable_and_opaque():
    a = ToolId.parse("builtin:workspace.read_file")
    b = ToolId.parse("mcp/registration-1:workspace.read_file")
    assert a != b
    assert a == ToolId.builtin("workspace.read_file")
    assert hash(a) == hash(ToolId.parse(str(a)))
    assert {a, b} == {ToolId.parse(str(a)), ToolId.parse(str(b))}


def test_constructors_per_kind():
    assert str(ToolId.extension("ext", "inspect")) == "extension/ext:inspect"
    assert str(ToolId.script("dir1", "x")) == "script/dir1:x"
    assert ToolId.extension("ext", "inspect").kind == "extension"
    with pytest.raises(ToolIdError):
        ToolId.extension(" ", "x")
    with pytest.raises(ToolIdError):
        ToolId.parse("weird:x").kind  # noqa: B018
