"""Saving generated media into the workspace's output root: the file's kind from its bytes or MIME type,
a name of the model's choosing (its folder part dropped, its extension made the real one), never
overwriting a file that exists (`-2`, `-3` … are added instead)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

from tooldeck.builtins.workspace_common import create_first_free, new_file_effect, workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.results import ToolEffect

OUTPUT_ROOT: Final = "output"
MAX_NAMES: Final = 1000
NO_FREE_NAME: Final = "media.no_free_name"
AUDIO_TYPES: Final = {
    "audio/ogg": "ogg", "audio/opus": "ogg", "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/aac": "aac",
    "audio/flac": "flac", "audio/x-flac": "flac", "audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
}


def image_kind(data: bytes) -> str | None:
    """png | jpg | webp | gif from the file's first bytes, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    return None


def audio_kind(content_type: str, data: bytes) -> str:
    """The audio file's extension from its MIME type, else its first bytes; `wav` when neither says."""
    kind = AUDIO_TYPES.get(content_type.split(";", 1)[0].strip().lower())
    if kind is not None:
        return kind
    if data.startswith(b"OggS"):
        return "ogg"
    if data.startswith(b"ID3") or data[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "mp3"
    if data.startswith(b"fLaC"):
        return "flac"
    return "wav"


def file_name(requested: str | None, stem: str, extension: str) -> str:
    """`requested` without its folder part and with `extension`; default `<stem>-<timestamp>`."""
    name = (requested or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    base = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name.lstrip(".")
    base = base.strip() or f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    return f"{base}.{extension}"


async def save_new(ctx: CallContext, name: str, data: bytes) -> tuple[str, ToolEffect]:
    """Write `data` as a new file `output/<name>` (or `<stem>-2.<ext>` … when taken); its shown path."""
    store, policy = workspace(ctx)
    loc, swap = await asyncio.to_thread(
        create_first_free, store, policy, f"{OUTPUT_ROOT}/{name}", data, tries=MAX_NAMES,
        no_free_name=ToolCallError(NO_FREE_NAME, f"{OUTPUT_ROOT}/{name} and {MAX_NAMES - 1} numbered variants are "
                                   "all taken; nothing was saved. Pass another `output_file`."))
    return loc.shown, new_file_effect(loc, swap.sha256, None)


def saved_answer(path: str, data: bytes, kind: str, **extra: Any) -> dict[str, Any]:
    return {"ok": True, "path": path, "size_bytes": len(data), "format": kind, **extra}
