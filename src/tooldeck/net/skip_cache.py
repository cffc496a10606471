"""`fetch_page`'s failure skip-cache (Agenvoy's): a URL that failed is not fetched again for a while —
a 4xx (or a page that says it is missing) for good, a 5xx for 12 hours, an empty page for 72 hours —
unless the call says `force`.

One JSON file under the home shared by every process of that home: each change is made under an
exclusive `flock` on a side file and written through a temp file and a rename, so readers never see
half a file and two processes never lose each other's entries. A file that does not parse is
replaced (it only ever holds hints), and the file keeps at most `MAX_ENTRIES` (the oldest go first).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

FOREVER: Final = None
CLIENT_ERROR_S: Final = None
SERVER_ERROR_S: Final = 12 * 3600.0
EMPTY_S: Final = 72 * 3600.0
MAX_ENTRIES: Final = 5_000


@dataclass(frozen=True, slots=True)
class Blocked:
    reason: str
    since: float
    until: float | None


class SkipCache:
    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def blocked(self, url: str, now: float | None = None) -> Blocked | None:
        entry = self._load().get(url)
        if not isinstance(entry, dict):
            return None
        until = entry.get("until")
        if until is not None and (not isinstance(until, int | float) or until <= (now or time.time())):
            return None
        return Blocked(str(entry.get("reason", "failed")), float(entry.get("since") or 0), until)

    def add(self, url: str, reason: str, seconds: float | None, now: float | None = None) -> None:
        at = now or time.time()
        with self._locked():
            data = {k: v for k, v in self._load().items() if isinstance(v, dict) and
                    (v.get("until") is None or (isinstance(v.get("until"), int | float) and v["until"] > at))}
            data[url] = {"reason": reason, "since": at, "until": None if seconds is None else at + seconds}
            if len(data) > MAX_ENTRIES:
                data = dict(sorted(data.items(), key=lambda kv: kv[1].get("since") or 0)[-MAX_ENTRIES:])
            self._write(data)

    def forget(self, url: str) -> None:
        with self._locked():
            data = self._load()
            if data.pop(url, None) is not None:
                self._write(data)

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        os.replace(tmp, self.path)
