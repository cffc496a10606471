from tooldeck.snapshot.render import render_tool, wrap_tools_array
from tooldeck.snapshot.schema_transforms import for_anthropic, for_gemini, transform

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:x",
    "type": "object",
    "title": "Args",
    "$defs": {"Point": {"type": "object", "title": "P", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
    "properties": {
        "title": {"type": "string", "title": "Title", "default": "untitled"},
        "default": {"type": "boolean"},
        "format": {"type": "string", "format": "email"},
        "mode": {"const": "fast"},
        "where": {"$ref": "#/$defs/Point"},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "kind": {"type": ["string", "null"], "enum": ["a", "b", None]},
        "extra": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["title", "ghost"],
    "additionalProperties": False,
}


def test_gemini_keeps_properties_named_like_keywords_and_drops_keywords():
    out = for_gemini(SCHEMA)
    assert set(out["properties"]) == {"title", "default", "format", "mode", "where", "maybe", "kind", "extra"}
    assert "title" not in out and "$schema" not in out and "$defs" not in out and "additionalProperties" not in out
    assert "default" not in out["properties"]["title"] and "title" not in out["properties"]["title"]
    assert out["properties"]["format"]["description"] == "(format: email)"
    assert out["properties"]["mode"] == {"enum": ["fast"], "type": "string"}
    assert out["properties"]["where"] == {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    assert out["properties"]["maybe"] == {"type": "integer", "nullable": True}
    assert out["properties"]["kind"]["nullable"] is True and out["properties"]["kind"]["type"] == "string"
    assert "additionalProperties" not in out["properties"]["extra"]
    assert out["required"] == ["title"]


def test_gemini_recursive_refs_do_not_loop():
    schema = {"type": "object", "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
              "properties": {"root": {"$ref": "#/$defs/N"}}}
    out = for_gemini(schema)
    assert out["properties"]["root"]["properties"]["next"]["type"] == "object"


def test_anthropic_drops_only_transport_metadata():
    out = for_anthropic(SCHEMA)
    assert "$schema" not in out and "$id" not in out
    assert out["$defs"] == SCHEMA["$defs"]
    assert out["properties"]["title"] == SCHEMA["properties"]["title"]
    assert transform(SCHEMA, "openai") == SCHEMA
    assert transform(SCHEMA, "bedrock") == SCHEMA


def test_each_provider_shape():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert render_tool("t", "d", schema, "openai") == {
        "type": "function", "function": {"name": "t", "description": "d", "parameters": schema}}
    assert render_tool("t", "d", schema, "anthropic") == {"name": "t", "description": "d", "input_schema": schema}
    assert render_tool("t", "d", schema, "bedrock") == {
        "toolSpec": {"name": "t", "description": "d", "inputSchema": {"json": schema}}}
    assert render_tool("t", "d", schema, "gemini") == {"name": "t", "description": "d", "parameters": schema}
    assert render_tool("t", "d", {"type": "object", "properties": {}}, "gemini") == {"name": "t", "description": "d"}
    assert wrap_tools_array([], "gemini") == []
    assert wrap_tools_array([{"name": "t"}], "gemini") == [{"functionDeclarations": [{"name": "t"}]}]
