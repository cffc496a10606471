"""The size limit of the file tools, checked before a write builds its result.

A location only needs `shown` here (the path as the model sees it), so the helpers take anything
that has it.
"""

from __future__ import annotations

from typing import Final, Protocol

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.errors import CONTENT_NOT_TEXT, FILE_TOO_LARGE
from tooldeck.workspace.text import encode_utf8

MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""No file tool reads or writes a file larger than this; the shell can handle bigger ones."""


class Shown(Protocol):
    @property
    def shown(self) -> str: ...


_SIZE_CHUNK: Final = 1 << 20


def utf8_size(text: str) -> int:
    """The UTF-8 size of `text` without encoding all of it at once (a lone surrogate counts 3 bytes)."""
    if text.isascii():
        return len(text)
    return sum(len(text[i:i + _SIZE_CHUNK].encode("utf-8", "surrogatepass"))
               for i in range(0, len(text), _SIZE_CHUNK))


def encoded(text: str, what: str) -> bytes:
    """The UTF-8 bytes of a text the model sent; a lone surrogate (which no UTF-8 file can hold) is refused."""
    try:
        return encode_utf8(text)
    except UnicodeEncodeError as exc:
        raise ToolCallError(CONTENT_NOT_TEXT, f"{what} holds U+{ord(text[exc.start]):04X} at character "
                            f"{exc.start}, a lone surrogate that a UTF-8 file cannot store; nothing was written. "
                            "Remove it, or write the character you meant.") from None


def check_size(loc: Shown, size: int) -> None:
    """Refuse a write whose result would be over `MAX_FILE_BYTES` (call it before building the result)."""
    if size > MAX_FILE_BYTES:
        raise ToolCallError(FILE_TOO_LARGE, f"This would make `{loc.shown}` {size:,} bytes, over the file tools' "
                            f"limit of {MAX_FILE_BYTES:,} bytes (64 MiB); nothing was written. Keep files smaller "
                            "(split the text over several files), or use the shell for files this large.")


