"""UTF-8 decoding and encoding of whole files in pieces.

One `bytes.decode` of a 64 MiB file that is not ASCII is a single C call that holds the interpreter
lock for 100–300 ms; done a megabyte at a time, every other thread of the process gets its turn between
pieces (at the cost of the pieces and the joined whole being in memory together for a moment). ASCII
and anything below `PIECE` is converted in one call (a copy: ~10 ms for 64 MiB).
"""

from __future__ import annotations

import codecs
from typing import Final

PIECE: Final = 1 << 20


def decode_utf8(data: bytes) -> str:
    """`data.decode("utf-8")`, in pieces; raises `UnicodeDecodeError` (positions within a piece)."""
    if len(data) <= PIECE or data.isascii():
        return data.decode("utf-8")
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    view = memoryview(data)
    parts = [decoder.decode(view[i:i + PIECE], False) for i in range(0, len(data), PIECE)]
    parts.append(decoder.decode(b"", True))
    return "".join(parts)


def encode_utf8(text: str) -> bytes:
    """`text.encode("utf-8")`, in pieces; a lone surrogate raises `UnicodeEncodeError` whose `start` is
    its index in `text`."""
    if len(text) <= PIECE or text.isascii():
        return text.encode("utf-8")
    parts = []
    for i in range(0, len(text), PIECE):
        try:
            parts.append(text[i:i + PIECE].encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise UnicodeEncodeError(exc.encoding, text, i + exc.start, i + exc.end, exc.reason) from None
    return b"".join(parts)
