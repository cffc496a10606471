"""`read_files`: Agenvoy's batch read, `{path: content | "error: …"}`.

Text (≤ 1 MiB) as numbered rows, 2,048 a page by default (`offset` is the first row, 1-based; a cut
page ends saying which `offset` comes next); PDF as `--- page i/N ---` chunks (`offset` / `limit` in
pages); DOCX as its text; CSV/TSV one row a line as a JSON array (`offset` / `limit` in rows);
images (PNG, JPEG, GIF, WebP; ≤ 10 MiB) as image content for the clients that take it: over MCP the
call's result carries an image block per image (the relay sink `tooldeck serve` opens, the one
proxied tools use); a model gets each image up to `MODEL_IMAGE_MAX_BYTES` beside the text in its
provider's shape (`ToolOutput.images`, `protocols/*`). Each image is copied to
`tool-results/images/<sha256>.<ext>` (same bytes, same file; never overwritten), the text names that
copy, and the records keep the copy's path (the resource ref `image:<mime>:<path>`), so replay sends
the same image even after the original changed. Text reads leave the run's read-state behind, so
`edit_file` can write or patch the file with the same compare-and-swap as `workspace_apply_patch`.
"""

from __future__ import annotations

import base64
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tooldeck.builtins.agenvoy_files import descriptors, documents
from tooldeck.builtins.agenvoy_files.common import MAX_TEXT_BYTES, batch_json, item_error, unique_key, workspace
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import MODEL_IMAGE_MAX_BYTES, ToolImage, ToolOutput, image_path
from tooldeck.workspace.errors import FILE_NOT_FOUND
from tooldeck.workspace.names import shown
from tooldeck.workspace.store import Location, WorkspaceStore, sha256

TOOL_ID = ToolId.builtin("read_files")
DEFAULT_ROWS: Final = 2048
MAX_FILES: Final = descriptors.MAX_FILES


class _ItemError(Exception):
    """An answer for one file that is not its content (Agenvoy's own texts, no `error:` code)."""


@dataclass(slots=True)
class _Images:
    root: Path
    """The workspace root, where the copies go (`tool-results/images/`)."""
    blocks: list[tuple[str, str, bytes]] = field(default_factory=list)
    """(path, MIME type, bytes) of every image read, in order (for MCP clients)."""
    model: list[ToolImage] = field(default_factory=list)
    """The images a model gets: those up to MODEL_IMAGE_MAX_BYTES, each with its copy's path."""


def read_files(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    store, policy = workspace(ctx)
    answer: dict[str, str] = {}
    images = _Images(Path(ctx.run.workspace_root))
    refs: list[str] = []
    for item in args["files"]:
        raw = item["path"]
        try:
            loc = store.locate(policy, raw)
            key = unique_key(answer, loc.shown)
            answer[key] = _read_one(store, loc, item.get("offset"), item.get("limit"), images)
            refs.append(loc.shown)
        except ToolCallError as exc:
            answer[unique_key(answer, shown(raw) if isinstance(raw, str) else str(raw))] = item_error(exc)
        except (_ItemError, documents.DocumentError) as exc:
            answer[unique_key(answer, shown(raw))] = f"error: {exc}"
    text = batch_json(answer)
    if images.blocks:
        _relay_images(ctx, text, images)
    return ToolOutput(text, answer, resource_refs=refs, images=images.model)


def _read_one(store: WorkspaceStore, loc: Location, offset: int | None, limit: int | None, images: _Images) -> str:
    data = store.read_if_exists(loc)
    if data is None:
        raise ToolCallError(FILE_NOT_FOUND, f"`{loc.shown}` does not exist; find it with find_files")
    if not data:
        raise _ItemError(f"{loc.shown} is empty")
    kind = documents.kind_of(loc.rel.rsplit("/", 1)[-1], data)
    if kind == "image":
        return _image(loc, data, images)
    if kind == "pdf":
        return _pdf(loc, documents.pdf_pages(data), offset, limit)
    if kind == "docx":
        return _rows(loc, documents.docx_text(data).split("\n"), offset, limit, "row")
    if b"\0" in data[:512]:
        raise _ItemError(f"{loc.shown} is binary file")
    if len(data) > MAX_TEXT_BYTES:
        raise _ItemError(f"file too large (1 MB): {len(data) / (1024 * 1024):.1f} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _ItemError(f"{loc.shown} is not UTF-8 text; inspect it with run_command") from None
    if kind in ("csv", "tsv"):
        documents.field_limit()
        rows = list(documents.table_rows(text, "," if kind == "csv" else "\t"))
        shown_text = _rows(loc, rows, offset, limit, "row")
        if _whole(offset, limit, len(rows)):
            store.read_states.record_full(loc.key, sha256(data), text)
        return shown_text
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    out = _rows(loc, lines, offset, limit, "row")
    first = offset or 1
    last = min(len(lines), first - 1 + (limit or DEFAULT_ROWS))
    if first == 1 and last == len(lines):
        store.read_states.record_full(loc.key, sha256(data), text)
    else:
        store.read_states.record_partial(loc.key, sha256(data), {n: lines[n - 1] for n in range(first, last + 1)})
    return out


def _whole(offset: int | None, limit: int | None, total: int) -> bool:
    return (offset or 1) == 1 and (limit or DEFAULT_ROWS) >= total


def _rows(loc: Location, lines: list[str], offset: int | None, limit: int | None, unit: str) -> str:
    total = len(lines)
    first = offset or 1
    if first > total:
        raise _ItemError(f"offset {first} exceeds({loc.shown}) {total}")
    last = min(total, first - 1 + (limit or DEFAULT_ROWS))
    width = len(str(last))
    out = [f"{n:>{width}}\t{lines[n - 1]}" for n in range(first, last + 1)]
    if last < total:
        out.append(f"… {unit}s {first}-{last} of {total}; continue with offset={last + 1}")
    return "\n".join(out)


def _pdf(loc: Location, pages: list[str], offset: int | None, limit: int | None) -> str:
    total = len(pages)
    first = offset or 1
    if total == 0 or first > total:
        raise _ItemError(f"offset {first} exceeds({loc.shown}) {total}")
    last = min(total, first - 1 + (limit or total))
    out = [f"--- page {n}/{total} ---\n{pages[n - 1]}" for n in range(first, last + 1)]
    if last < total:
        out.append(f"… pages {first}-{last} of {total}; continue with offset={last + 1}")
    return "\n".join(out)


def _image(loc: Location, data: bytes, images: _Images) -> str:
    if len(data) > documents.MAX_IMAGE_BYTES:
        raise _ItemError(f"image too large (10 MB): {len(data) / (1024 * 1024):.1f} MB")
    mime = documents.image_type(data) or "image/png"
    images.blocks.append((loc.shown, mime, data))
    copy = image_path(mime, sha256(data))
    _keep(images.root / copy, data)
    head = f"image ({mime}, {len(data):,} bytes): sent as image content to "
    if len(data) > MODEL_IMAGE_MAX_BYTES:
        return (f"{head}MCP clients only, not to the model: over the {MODEL_IMAGE_MAX_BYTES / (1024 * 1024):.2f} "
                f"MiB a model provider takes (copy kept at `{copy}`)")
    if all(i.path != copy for i in images.model):  # the same image twice in a batch is sent once
        images.model.append(ToolImage(copy, mime, data))
    return f"{head}clients that take images (copy kept at `{copy}`); a model that reads only text sees this line"


def _keep(path: Path, data: bytes) -> None:
    """The image's copy, written once: named by its content, an existing file already holds these bytes."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)


def _relay_images(ctx: CallContext, text: str, images: _Images) -> None:
    """Over MCP (`tooldeck serve`): the result's blocks are the JSON text and one image block per image."""
    from tooldeck.sources.mcp import relay

    sink = relay.current()
    if sink is None:
        return
    import mcp_types as types

    blocks: list[Any] = [types.TextContent(type="text", text=text)]
    blocks.extend(types.ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime)
                  for _path, mime, data in images.blocks)
    sink[ctx.call_id] = types.CallToolResult(content=blocks, is_error=False)



DESCRIPTOR = descriptors.READ_FILES
TOOLS = [BuiltinTool(DESCRIPTOR, read_files, blocking=True)]
