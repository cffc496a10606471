"""Capped output buffers and the model-facing rendering of a shell result."""

from __future__ import annotations

import threading


class CappedText:
    """Accumulates text up to `limit` UTF-8 bytes; remembers whether anything was dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[str] = []
        self._bytes = 0
        self.truncated = False
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            if self.truncated:
                return
            data = text.encode("utf-8", "replace")
            room = self.limit - self._bytes
            if len(data) <= room:
                self._parts.append(text)
                self._bytes += len(data)
                return
            self._parts.append(data[:room].decode("utf-8", "ignore"))
            self._bytes = self.limit
            self.truncated = True

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(self._parts)


def clip(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` UTF-8 bytes (on a character boundary), and whether it was cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", "ignore"), True


def render(header: str, stdout: str, stderr: str, truncated: bool) -> str:
    """`Exit code: N` (or the timeout/cancel line), stdout, stderr (prefixed when there is stdout), the cap note."""
    parts = [header]
    out = stdout.rstrip("\n")
    err = stderr.rstrip("\n")
    if out:
        parts.append(out)
    if err:
        parts.append(f"stderr:\n{err}" if out else err)
    if truncated:
        parts.append("Output truncated.")
    return "\n".join(parts)
