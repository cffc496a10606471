"""MCP tool results → model text (TauriTavern's `mcp_model_content`, adapted).

- text blocks, joined with blank lines;
- `structuredContent` under `## Details`, unless a text block already is that JSON;
- images, audio and embedded resources saved under the run's `tool-results/<invocation-id>/` and
  given as resource refs, with a one-line note where the block was;
- resource links listed under `## Resource links`;
- anything else noted under `## Notes`;
- nothing at all → "The tool completed without returning content."

Long text is not cut here: the projection spills it to a file after this mapping.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types

from tooldeck.core.results import ToolOutput
from tooldeck.projection import TOOL_RESULTS_ROOT, call_stem
from tooldeck.sources.mcp.errors import TOOL_ERROR

EMPTY = "The tool completed without returning content."
_INLINE_DICT_VALUE = 200


@dataclass(slots=True)
class SaveTarget:
    """Where a call's binary and resource blocks go: `<workspace>/tool-results/<invocation>/`."""

    workspace_root: Path
    invocation_id: str
    call_id: str
    round_no: int

    @property
    def rel_dir(self) -> str:
        return f"{TOOL_RESULTS_ROOT}/{self.invocation_id}"

    def save(self, index: int, data: bytes, ext: str) -> str:
        directory = self.workspace_root / self.rel_dir
        directory.mkdir(parents=True, exist_ok=True)
        stem = f"round-{self.round_no:03d}-{call_stem(self.call_id)}-content-{index}"
        n = 1
        while True:
            name = f"{stem}{'' if n == 1 else f'-{n}'}{ext}"
            try:
                with (directory / name).open("xb") as fh:
                    fh.write(data)
            except FileExistsError:
                n += 1
                continue
            return f"{self.rel_dir}/{name}"


@dataclass(slots=True)
class _Mapped:
    parts: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    raw_blocks: list[dict[str, Any]] = field(default_factory=list)


def result_output(result: types.CallToolResult, target: SaveTarget) -> ToolOutput:
    """The ToolOutput of a known tool result (`isError` → `mcp.tool_error`)."""
    m = _Mapped()
    for index, block in enumerate(result.content, start=1):
        _map_block(index, block, target, m)
    structured = result.structured_content
    body = "\n\n".join(p for p in m.parts if p)
    sections = [body] if body.strip() else []
    if structured is not None and not _repeats(structured, m.texts):
        sections.append("## Details\n\n" + render_markdown(structured))
    if m.links:
        sections.append("## Resource links\n\n" + "\n".join(m.links))
    if m.notes:
        sections.append("## Notes\n\n" + "\n".join(f"- {n}" for n in m.notes))
    content = "\n\n".join(sections) if sections else EMPTY
    raw = _raw_result(result, m.raw_blocks)
    if m.diagnostics:
        raw["tooldeck_diagnostics"] = m.diagnostics
    # `structured` is the server's structuredContent as is, so a gateway re-exposing the tool (tooldeck
    # serve) can hand it on under the same output schema; content notes live in the text and the raw record.
    out_structured = structured
    if result.is_error:
        return ToolOutput(content, out_structured, True, TOOL_ERROR, m.refs, raw=raw)
    return ToolOutput(content, out_structured, False, None, m.refs, raw=raw)


_BEFORE_CONTENT = tuple(
    f.alias or name for name, f in
    list(types.CallToolResult.model_fields.items())[:list(types.CallToolResult.model_fields).index("content")])
"""The wire names of the result's fields that its dump puts before `content` (`_meta`)."""


def _raw_result(result: types.CallToolResult, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The result's JSON dump with `blocks` as its content, in the dump's key order (the content blocks are
    dumped one by one already: not twice)."""
    rest = result.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"content"})
    raw = {key: rest.pop(key) for key in _BEFORE_CONTENT if key in rest}
    raw["content"] = blocks
    raw.update(rest)
    return raw


def _dump_block(block: Any) -> Any:
    """A content block's JSON dump; a plain text block's without pydantic (the same dict)."""
    if type(block) is types.TextContent and block.annotations is None and block.meta is None:
        return {"type": "text", "text": block.text}
    return block.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(block, "model_dump") else block


def _map_block(index: int, block: Any, target: SaveTarget, m: _Mapped) -> None:
    raw = _dump_block(block)
    if isinstance(block, types.TextContent):
        m.parts.append(block.text)
        m.texts.append(block.text)
        m.raw_blocks.append(raw)
    elif isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        _save_binary(index, kind, block.data, block.mime_type, target, m, raw)
    elif isinstance(block, types.EmbeddedResource):
        _save_resource(index, block.resource, target, m, raw)
    elif isinstance(block, types.ResourceLink):
        line = f"- {block.name}: {block.uri}"
        if block.mime_type:
            line += f" ({block.mime_type})"
        if block.description:
            line += f" — {block.description}"
        m.links.append(line)
        m.raw_blocks.append(raw)
    else:
        kind = getattr(block, "type", type(block).__name__)
        _note(m, "mcp.content_unsupported", f"content block {index} has type {kind!r}, which tooldeck does not "
              "show; it is kept in the audit record", index)
        m.raw_blocks.append(raw)


def _save_binary(index: int, kind: str, data: str, mime: str, target: SaveTarget, m: _Mapped,
                 raw: dict[str, Any]) -> None:
    try:
        payload = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        _note(m, "mcp.content_undecodable", f"{kind} block {index} ({mime}) is not valid base64 and was not saved",
              index)
        m.raw_blocks.append(raw)
        return
    rel = target.save(index, payload, _extension(mime, ".bin"))
    m.refs.append(rel)
    m.parts.append(f"[{kind} {index}: {mime}, {len(payload)} bytes, saved at `{rel}`]")
    m.raw_blocks.append({**raw, "data": f"<saved at {rel}: {len(payload)} bytes>"})


def _save_resource(index: int, resource: Any, target: SaveTarget, m: _Mapped, raw: dict[str, Any]) -> None:
    mime = resource.mime_type or ""
    if isinstance(resource, types.TextResourceContents):
        rel = target.save(index, resource.text.encode("utf-8"), _extension(mime, ".txt", text=True))
        m.refs.append(rel)
        m.parts.append(f"[resource {index}: {resource.uri}{f' ({mime})' if mime else ''}, "
                       f"{len(resource.text)} characters, saved at `{rel}`]")
        m.raw_blocks.append({**raw, "resource": {**raw.get("resource", {}), "text": f"<saved at {rel}>"}})
        return
    try:
        payload = base64.b64decode(resource.blob, validate=True)
    except (binascii.Error, ValueError, AttributeError):
        _note(m, "mcp.content_undecodable", f"resource block {index} ({resource.uri}) could not be decoded and was "
              "not saved", index)
        m.raw_blocks.append(raw)
        return
    rel = target.save(index, payload, _extension(mime, ".bin"))
    m.refs.append(rel)
    m.parts.append(f"[resource {index}: {resource.uri}{f' ({mime})' if mime else ''}, {len(payload)} bytes, "
                   f"saved at `{rel}`]")
    m.raw_blocks.append({**raw, "resource": {**raw.get("resource", {}), "blob": f"<saved at {rel}>"}})


def _note(m: _Mapped, code: str, message: str, index: int) -> None:
    m.notes.append(message)
    m.diagnostics.append({"code": code, "message": message, "content_index": index})


def _extension(mime: str, default: str, text: bool = False) -> str:
    base = mime.split(";", 1)[0].strip().lower()
    if base in ("text/plain", "") and text:
        return ".txt"
    if base == "text/markdown":
        return ".md"
    return mimetypes.guess_extension(base) or default


def _repeats(structured: Any, texts: list[str]) -> bool:
    """True when a text block already says what the structured content says: it is that JSON, or the
    structure only wraps the text (`{"result": <the text>}`, as SDK servers do for plain return values)."""
    wrapped = next(iter(structured.values())) if isinstance(structured, dict) and len(structured) == 1 else None
    for text in texts:
        stripped = text.strip()
        if wrapped is not None and wrapped in (text, stripped):
            return True
        if not stripped or stripped[0] not in "{[-0123456789tfn\"":
            continue
        try:
            parsed = json.loads(stripped)
        except ValueError:
            continue
        if parsed == structured or (wrapped is not None and parsed == wrapped):
            return True
    return False


def render_markdown(value: Any) -> str:
    """A flat object of short values → a bullet list; anything else → a JSON code block."""
    if isinstance(value, dict) and value and all(_short_scalar(v) for v in value.values()):
        return "\n".join(f"- **{k}**: {_scalar(v)}" for k, v in value.items())
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def _short_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= _INLINE_DICT_VALUE and "\n" not in value
    return value is None or isinstance(value, bool | int | float)


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
