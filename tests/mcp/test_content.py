"""MCP result → model text, with real mcp_types objects."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp_types as types

from tooldeck.sources.mcp.content import EMPTY, SaveTarget, render_markdown, result_output

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def _target(tmp_path: Path) -> SaveTarget:
    return SaveTarget(tmp_path, "inv_1", "call_1", 2)


def _text(t: str) -> types.TextContent:
    return types.TextContent(type="text", text=t)


def test_text_blocks_join_with_blank_lines(tmp_path: Path) -> None:
    out = result_output(types.CallToolResult(content=[_text("one"), _text("two")]), _target(tmp_path))
    assert out.content == "one\n\ntwo" and not out.is_error and out.error_code is None
    assert out.raw["content"][0] == {"type": "text", "text": "one"}


def test_structured_content_details_unless_repeated(tmp_path: Path) -> None:
    data = {"city": "Oslo", "temp": 3}
    repeated = types.CallToolResult(content=[_text('{"city": "Oslo", "temp": 3}')], structured_content=data)
    assert "## Details" not in result_output(repeated, _target(tmp_path)).content
    wrapped = types.CallToolResult(content=[_text("42")], structured_content={"result": 42})
    assert result_output(wrapped, _target(tmp_path)).content == "42"
    different = types.CallToolResult(content=[_text("Cold in Oslo.")], structured_content=data)
    out = result_output(different, _target(tmp_path))
    assert out.content == "Cold in Oslo.\n\n## Details\n\n- **city**: Oslo\n- **temp**: 3"
    assert out.structured == data
    only = result_output(types.CallToolResult(content=[], structured_content={"a": {"b": 1}}), _target(tmp_path))
    assert only.content.startswith("## Details\n\n```json")


def test_images_and_resources_are_saved_as_refs(tmp_path: Path) -> None:
    result = types.CallToolResult(content=[
        _text("see"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri="file:///notes.md", mime_type="text/markdown", text="# Notes")),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="file:///x.bin", mime_type="application/octet-stream", blob=base64.b64encode(b"\0\1").decode())),
        types.ResourceLink(type="resource_link", uri="https://example.invalid/a", name="a", description="An A."),
    ])
    out = result_output(result, _target(tmp_path))
    assert len(out.resource_refs) == 3
    png, md, blob = (tmp_path / r for r in out.resource_refs)
    assert png.read_bytes() == base64.b64decode(PNG) and png.suffix == ".png"
    assert md.read_text() == "# Notes" and md.suffix == ".md"
    assert blob.read_bytes() == b"\0\1"
    assert all(r.startswith("tool-results/inv_1/round-002-") for r in out.resource_refs)
    assert f"[image 2: image/png, {len(base64.b64decode(PNG))} bytes, saved at `{out.resource_refs[0]}`]" \
        in out.content
    assert "## Resource links\n\n- a: https://example.invalid/a — An A." in out.content
    assert PNG not in str(out.raw)  # the audit record points at the file instead of holding the bytes


def test_empty_error_and_undecodable(tmp_path: Path) -> None:
    assert result_output(types.CallToolResult(content=[]), _target(tmp_path)).content == EMPTY
    err = result_output(types.CallToolResult(content=[_text("nope")], is_error=True), _target(tmp_path))
    assert err.is_error and err.error_code == "mcp.tool_error" and err.content == "nope"
    bad = types.CallToolResult(content=[types.ImageContent(type="image", data="%%%", mime_type="image/png")])
    out = result_output(bad, _target(tmp_path))
    assert "## Notes" in out.content and out.raw["tooldeck_diagnostics"][0]["code"] == "mcp.content_undecodable"


def test_render_markdown() -> None:
    assert render_markdown({"a": 1, "b": "x"}) == "- **a**: 1\n- **b**: x"
    assert render_markdown([1, 2]).startswith("```json")


def _old_raw(result: types.CallToolResult, blocks: list[dict[str, object]]) -> dict[str, object]:
    """The raw record as it was built before text blocks were dumped without pydantic: the whole result dumped,
    then its content replaced by the blocks dumped one by one."""
    raw = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    raw["content"] = blocks
    return raw


def test_the_raw_record_is_the_results_dump_key_for_key_and_in_order(tmp_path: Path) -> None:
    annotated = types.TextContent(type="text", text="noted", annotations=types.Annotations(priority=0.5),
                                  meta={"k": "v"})
    results = [
        types.CallToolResult(content=[_text("one"), _text("two")]),
        types.CallToolResult(content=[_text("x")], structured_content={"result": "x"}, is_error=True),
        types.CallToolResult(content=[annotated, _text("plain")], meta={"trace": 1}),
        types.CallToolResult.model_validate({"_meta": {"a": None}, "content": [
            {"type": "text", "text": "é\u2028", "_meta": {"z": 1}}, {"type": "text", "text": ""}],
            "structuredContent": {"n": 1}, "isError": False, "unknown": 3}, by_name=False),
        types.CallToolResult(content=[]),
    ]
    for result in results:
        raw = result_output(result, _target(tmp_path)).raw
        blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
        expected = _old_raw(result, blocks)
        assert raw == expected and list(raw) == list(expected)
        assert [list(b) for b in raw["content"]] == [list(b) for b in blocks]  # type: ignore[union-attr]
