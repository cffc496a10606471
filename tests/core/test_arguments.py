import pytest

from tooldeck.core.arguments import MISSING, ToolArguments
from tooldeck.core.errors import ToolCallError


@pytest.mark.parametrize("wire", [MISSING, None, "null", "  ", "", "{}", {}])
def test_every_empty_spelling_decodes_to_an_empty_object(wire):
    args = ToolArguments.decode(wire)
    assert args.is_valid
    assert args.as_map() == {}


def test_both_wire_encodings_of_a_value_decode_to_the_same_arguments():
    assert ToolArguments.decode('{"depth":2}') == ToolArguments.decode({"depth": 2})
    assert ToolArguments.decode('{"depth":2}').as_map() == {"depth": 2}


@pytest.mark.parametrize(
    ("wire", "raw"),
    [
        ([1, 2], "[1,2]"),
        ("[1,2]", "[1,2]"),
        ('{"path":', '{"path":'),
        ("42", "42"),
        (True, "true"),
        (42, "42"),
        ('"[1,2]"', '"[1,2]"'),
        ('"{\\"a\\":1}"', '"{\\"a\\":1}"'),
    ],
)
def test_non_objects_are_invalid_and_kept_verbatim(wire, raw):
    args = ToolArguments.decode(wire)
    assert not args.is_valid
    assert args.raw_invalid == raw
    assert args.to_record() == raw
    assert args.to_replay_object() == {}
    assert args.encode_for_replay() == "{}"
    with pytest.raises(ToolCallError) as err:
        args.as_map()
    assert err.value.code == "tool.invalid_arguments"
    assert "send `{}`" in err.value.message
    assert raw in err.value.message
    assert "…" not in err.value.message


def test_long_invalid_text_is_quoted_to_200_chars_with_an_ellipsis():
    wire = "x" * 500
    args = ToolArguments.decode(wire)
    assert args.to_record() == wire
    assert args.to_replay_object() == {}
    message = args.invalid_message()
    assert len(message) < 400
    assert "…" in message
    assert "x" * 200 + "…" in message
    assert "x" * 201 not in message


def test_valid_object_replays_as_itself():
    args = ToolArguments.decode('{"b": [1, {"c": null}]}')
    assert args.encode_for_replay() == '{"b":[1,{"c":null}]}'
    assert ToolArguments.from_record(args.to_record()) == args
    assert ToolArguments.from_record("[1") == ToolArguments.decode("[1")
