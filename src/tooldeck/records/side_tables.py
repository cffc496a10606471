"""Tables that live in the records database beside the records schema (MCP registrations, the error
memory): each owner creates its own with `CREATE TABLE IF NOT EXISTS` and never touches
`PRAGMA user_version`, which belongs to the records store's migrations."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from tooldeck.core.errors import TooldeckError

BUSY_TIMEOUT_S: Final = 10.0


@contextlib.contextmanager
def side_table(path: Path, schema: str, error_code: str) -> Iterator[sqlite3.Connection]:
    """A connection to `path` (autocommit; WAL where it can) with `schema` applied; any SQLite failure is
    `error_code`, naming the file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise TooldeckError(error_code, f"cannot open {path}: {exc}; check that the home dir is writable") from exc
    try:
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(schema)
        yield conn
    except sqlite3.Error as exc:
        raise TooldeckError(error_code, f"{path}: {exc}; check that the file is a tooldeck records database and "
                            "is writable") from exc
    finally:
        conn.close()
