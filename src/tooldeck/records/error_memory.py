"""The error memory behind `error_history` / `write_error` (Agenvoy's): what went wrong with a tool, why,
what was done and whether it worked, kept 90 days from the last time it was returned.

Stored in the records database (`<home>/records.sqlite`) in its own table beside the records schema
(like `registrations.py`), so every process of a home shares it. Records are found by keyword
(case-insensitive substring of the tool, symptom, cause or keywords) or, within one tool, by the
class of error the keyword names (`error_type:<class>`, from the same heuristics that classify a
record when it is written), newest first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tooldeck.records.side_tables import side_table

TTL_S: Final = 90 * 24 * 3600.0
DEFAULT_LIMIT: Final = 4
MAX_LIMIT: Final = 16
"""The search limit's default and cap (the tool's schema says the same: builtins/error_memory.py)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS error_memory (
    id          TEXT PRIMARY KEY,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    tool_name   TEXT NOT NULL,
    keywords    TEXT NOT NULL,
    symptom     TEXT NOT NULL,
    cause       TEXT,
    action      TEXT NOT NULL,
    outcome     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS error_memory_by_tool ON error_memory (tool_name, created_at);
"""

_CLASSES: Final = (
    ("tool_not_exist", ("not exist:", "tool not found", "unsupported tool")),
    ("required_param", ("required",)),
    ("invalid_param", ("invalid",)),
    ("timeout", ("timeout", "deadline exceeded")),
    ("permission", ("unauthorized", "forbidden", "permission denied", "access denied")),
    ("no_result", ("no result", "no data", "not found", "empty result")),
)


def error_class(text: str) -> str:
    """Agenvoy's heuristic class of an error text (first rule that matches; `other` when none)."""
    lowered = text.lower()
    for name, needles in _CLASSES:
        if any(n in lowered for n in needles):
            return name
    return "other"


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    id: str
    created_at: float
    tool_name: str
    keywords: list[str]
    symptom: str
    cause: str | None
    action: str
    outcome: str

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                           time.gmtime(self.created_at)),
                               "tool_name": self.tool_name, "keywords": self.keywords, "symptom": self.symptom}
        if self.cause:
            out["cause"] = self.cause
        out.update(action=self.action, outcome=self.outcome)
        return out


def _record(row: Sequence[Any]) -> ErrorRecord:
    return ErrorRecord(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6], row[7])


_COLUMNS = "id, created_at, tool_name, keywords, symptom, cause, action, outcome"


class ErrorMemory:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _connect(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return side_table(self.path, _SCHEMA, "records.error_memory_unavailable")

    def write(self, tool_name: str, keywords: Sequence[str], symptom: str, action: str, outcome: str,
              cause: str | None = None, now: float | None = None) -> ErrorRecord:
        at = time.time() if now is None else now
        words = list(dict.fromkeys(k.strip().lower() for k in keywords if k.strip()))
        kind = "error_type:" + error_class(f"{symptom} {cause or ''}")
        if kind not in words:
            words.append(kind)
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM error_memory WHERE expires_at <= ?", (at,))
                for attempt in range(8):
                    rid = hashlib.sha256(f"{tool_name}{time.time_ns()}{attempt}".encode()).hexdigest()[:8]
                    if conn.execute("SELECT 1 FROM error_memory WHERE id = ?", (rid,)).fetchone() is None:
                        break
                conn.execute("INSERT INTO error_memory VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (rid, at, at + TTL_S, tool_name, json.dumps(words, ensure_ascii=False), symptom,
                              cause, action, outcome))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return ErrorRecord(rid, at, tool_name, words, symptom, cause, action, outcome)

    def read(self, record_id: str, now: float | None = None) -> ErrorRecord | None:
        at = time.time() if now is None else now
        with self._connect() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM error_memory WHERE id = ? AND expires_at > ?",
                               (record_id.strip().lower(), at)).fetchone()
            if row is not None:
                conn.execute("UPDATE error_memory SET expires_at = ? WHERE id = ?", (at + TTL_S, row[0]))
        return None if row is None else _record(row)

    def search(self, keyword: str, tool_name: str | None = None, limit: int = DEFAULT_LIMIT,
               now: float | None = None) -> list[ErrorRecord]:
        """Newest first: with a tool, its records of the keyword's error class or containing the keyword;
        without, every record containing the keyword (tool, symptom, cause or a keyword)."""
        at = time.time() if now is None else now
        limit = max(1, min(int(limit), MAX_LIMIT))
        needle = keyword.strip().lower()
        pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        text_match = ("(lower(tool_name) LIKE ? ESCAPE '\\' OR lower(symptom) LIKE ? ESCAPE '\\' OR "
                      "lower(coalesce(cause, '')) LIKE ? ESCAPE '\\' OR lower(keywords) LIKE ? ESCAPE '\\')")
        if tool_name:
            kind = json.dumps(f"error_type:{error_class(needle)}")
            sql = (f"SELECT {_COLUMNS} FROM error_memory WHERE expires_at > ? AND tool_name = ? AND "
                   f"(instr(keywords, ?) > 0 OR {text_match}) ORDER BY created_at DESC LIMIT ?")
            params: tuple[Any, ...] = (at, tool_name, kind, pattern, pattern, pattern, pattern, limit)
        else:
            sql = (f"SELECT {_COLUMNS} FROM error_memory WHERE expires_at > ? AND {text_match} "
                   "ORDER BY created_at DESC LIMIT ?")
            params = (at, pattern, pattern, pattern, pattern, limit)
        with self._connect() as conn:
            rows = conn.execute(sql, params).fetchall()
            if rows:
                conn.executemany("UPDATE error_memory SET expires_at = ? WHERE id = ?",
                                 [(at + TTL_S, r[0]) for r in rows])
        return [_record(r) for r in rows]
