"""Listing validation (a bad tool is a diagnostic, not a failure) and the on-disk catalog cache."""

from __future__ import annotations

from pathlib import Path

from tooldeck.sources.mcp import catalog as cat

OBJ = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_bad_tools_become_diagnostics() -> None:
    raw = [
        {"name": "good", "description": "ok", "inputSchema": OBJ},
        {"name": "root_string", "inputSchema": {"type": "string"}},
        {"name": "no_schema"},
        {"name": "", "inputSchema": OBJ},
        "not an object",
        {"name": "bad_jsonschema", "inputSchema": {"type": "object", "properties": {"x": {"type": 12}}}},
        {"name": "good", "inputSchema": OBJ},
        {"name": "desc_not_text", "description": 5, "inputSchema": OBJ},
    ]
    kept, problems = cat.validate_tools(raw, "srv-1", "srv")
    assert [t["name"] for t in kept] == ["good"]
    codes = [p.code for p in problems]
    assert codes.count("mcp.tool_schema_invalid") == 3
    assert codes.count("mcp.tool_definition_invalid") == 3
    assert codes.count("mcp.tool_duplicate") == 1
    root = next(p for p in problems if "root_string" in p.message)
    assert root.tool_id == "mcp/srv-1:root_string" and '"object"' in root.message


def test_at_most_512_tools() -> None:
    raw = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(520)]
    kept, problems = cat.validate_tools(raw, "r", "srv")
    assert len(kept) == 512
    assert [p.code for p in problems] == ["mcp.tool_limit_exceeded"]
    assert "8 were left out" in problems[0].message


def test_cache_roundtrip_and_endpoint_binding(tmp_path: Path) -> None:
    catalog = cat.ServerCatalog("r1", "srv", "key1", 123.0, ({"name": "a", "inputSchema": OBJ},),
                                protocol_version="2025-11-25")
    cat.save_cache(tmp_path, catalog)
    loaded, problem = cat.load_cache(tmp_path, "r1", "key1")
    assert problem is None and loaded is not None
    assert loaded.names == frozenset({"a"}) and loaded.protocol_version == "2025-11-25"
    assert cat.load_cache(tmp_path, "r1", "other-endpoint") == (None, None)
    assert cat.load_cache(tmp_path, "missing", "key1") == (None, None)
    (tmp_path / "r2.json").write_text("{broken", encoding="utf-8")
    none, problem = cat.load_cache(tmp_path, "r2", "k")
    assert none is None and problem is not None and problem.code == "mcp.catalog_cache_invalid"
    assert not list(tmp_path.glob(".*.tmp"))
