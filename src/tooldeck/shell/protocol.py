"""Frames between the host and a shell worker process, over the worker's stdin and stdout pipes.

A frame is a 5-byte header (kind, payload length) and the payload. Control frames carry JSON
(ASCII-escaped, so a lone surrogate never breaks the encoding); output frames carry the raw UTF-8
bytes of a stdout or stderr chunk, so a flood of output costs no JSON work.
"""

from __future__ import annotations

import json
import struct
from typing import Any

HEADER = struct.Struct("<BI")
MAX_FRAME_BYTES = 64 * 1024 * 1024
"""A larger length can only come from a corrupt stream; the reader refuses it."""

# host → worker
RUN = 1
STOP = 2
# worker → host
STDOUT = 10
STDERR = 11
DONE = 12
FAULT = 13


class ProtocolError(Exception):
    """The byte stream from the other side is not a sequence of frames."""


def frame(kind: int, payload: bytes) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def json_frame(kind: int, value: Any) -> bytes:
    return frame(kind, json.dumps(value, ensure_ascii=True, separators=(",", ":"), check_circular=False).encode())


def load(payload: bytes) -> Any:
    return json.loads(payload)


class FrameReader:
    """Splits a byte stream into `(kind, payload)` frames; feed it whatever `os.read` returned."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        buf = self._buf
        buf += data
        frames: list[tuple[int, bytes]] = []
        start = 0
        size = HEADER.size
        while len(buf) - start >= size:
            kind, length = HEADER.unpack_from(buf, start)
            if length > MAX_FRAME_BYTES:
                raise ProtocolError(f"frame of {length} bytes")
            end = start + size + length
            if len(buf) < end:
                break
            frames.append((kind, bytes(buf[start + size:end])))
            start = end
        if start:
            del buf[:start]
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)
