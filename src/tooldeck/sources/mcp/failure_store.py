"""The last failure of each registration on disk, `<home>/mcp/failures/<registration-id>.json`.

A failure seen by one process (`tooldeck serve`, the first `Runtime` of a home) is what another one
(`tooldeck mcp list`, `tooldeck call` beside it) must report, so it is written when a connection or
discovery fails and removed by the next success. Written atomically (temp file + rename); a file of
another endpoint, or one that cannot be read, counts as no failure (the next attempt rewrites it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from tooldeck.sources.mcp.failures import Failure

log = logging.getLogger("tooldeck.mcp")
VERSION = 1


def failure_path(failure_dir: Path, registration_id: str) -> Path:
    return failure_dir / f"{registration_id}.json"


def load(failure_dir: Path, registration_id: str, endpoint_key: str) -> Failure | None:
    path = failure_path(failure_dir, registration_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.debug("the MCP failure record %s is unreadable (%s); ignored", path, exc)
        return None
    try:
        if data.get("version") != VERSION or data.get("endpoint_key") != endpoint_key:
            return None
        return Failure.from_dict(data["failure"])
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        log.debug("the MCP failure record %s is malformed (%s); ignored", path, exc)
        return None


def save(failure_dir: Path, registration_id: str, endpoint_key: str, failure: Failure) -> None:
    """Raises OSError when the file cannot be written."""
    failure_dir.mkdir(parents=True, exist_ok=True)
    path = failure_path(failure_dir, registration_id)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    record = {"version": VERSION, "registration_id": registration_id, "endpoint_key": endpoint_key,
              "failure": failure.to_dict()}
    try:
        tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def clear(failure_dir: Path, registration_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        failure_path(failure_dir, registration_id).unlink()
