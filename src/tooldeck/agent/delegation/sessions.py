"""Subagent sessions (Agenvoy's `subagents` list): a named session keeps a role (its system prompt) and a
model for later legs, in `<home>/subagents/sessions.json`; a leg without one runs in a temp session.
The file is replaced atomically under an exclusive lock, so processes sharing the home do not lose
each other's sessions."""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FOLDER = "subagents"
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class Session:
    id: str
    name: str
    role: str
    model: str
    created_at: float
    updated_at: float
    legs: int = 0


@dataclass(frozen=True)
class Chosen:
    id: str
    name: str | None
    role: str | None
    temp: bool


def valid_id(session_id: str) -> bool:
    return bool(_ID.match(session_id))


class Sessions:
    def __init__(self, home: Path) -> None:
        self.path = home / FOLDER / "sessions.json"

    def _read(self) -> list[Session]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [Session(**item) for item in data.get("sessions", [])]

    @contextmanager
    def _locked(self) -> Iterator[list[Session]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            sessions = self._read()
            yield sessions
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"sessions": [asdict(s) for s in sessions]}, indent=2), encoding="utf-8")
            tmp.replace(self.path)

    def list(self) -> list[Session]:
        return self._read()

    def choose(self, name: str | None, session_id: str | None, role: str | None, model: str) -> Chosen:
        """The session of a leg: `session_id` if given; else the named session `name`; else a new named session
        when `name` comes with a role (`system_prompt`); else a temp session."""
        with self._locked() as sessions:
            now = time.time()
            found = next((s for s in sessions if (session_id and s.id == session_id)
                          or (not session_id and name and s.name == name)), None)
            if found is None and name and role and not session_id:
                found = Session(f"ses_{uuid.uuid4().hex[:8]}", name, role, model, now, now)
                sessions.append(found)
            if found is None:
                return Chosen(session_id or f"tmp-{uuid.uuid4().hex[:8]}", name, role, True)
            found.legs += 1
            found.updated_at = now
            if role:
                found.role = role
            return Chosen(found.id, found.name, role or found.role, False)

    def describe(self) -> tuple[str, list[dict[str, Any]]]:
        sessions = self.list()
        if not sessions:
            return ("No named subagent sessions. A leg given `name` and `system_prompt` creates one; later legs "
                    "with that `name` reuse its role.", [])
        lines = [f"- {s.name} (session={s.id}, model {s.model}, {s.legs} leg(s)): {' '.join(s.role.split())[:200]}"
                 for s in sessions]
        return "\n".join(lines), [asdict(s) for s in sessions]
