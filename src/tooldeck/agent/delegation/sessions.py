"""Subagent sessions (Agenvoy's `subagents` list): a named session keeps a role (its system prompt) and a
model for later legs, in `<home>/subagents/sessions.json`, and its conversation, in
`<home>/subagents/history/<session id>.jsonl`; a leg without one runs in a temp session, which keeps
nothing.

sessions.json is replaced atomically (a temp file, fsync, rename) under an exclusive `flock` on
`sessions.lock`, so processes sharing the home do not lose each other's sessions. A session's
conversation is one JSON line per completed leg, `{"task", "answer", "new", "run_id", "model", "at"}`,
appended under the same lock with one write and an fsync: a crash leaves the lines before it whole
and at most a torn last line, which readers skip and the next append cuts off (a line counts once
its newline is written). Lines, not the records
store: the sessions must work with records off, and a leg's exchange in a provider-neutral form can be
replayed to a later leg of another model or provider (its tool calls stay in the leg's own records).
The next leg of the session replays the exchanges from the last leg that was `new` on, at most
`HISTORY_LEGS` of them."""

from __future__ import annotations

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

from tooldeck.core.errors import ToolCallError
from tooldeck.file_lock import exclusive

FOLDER = "subagents"
HISTORY = "history"
HISTORY_LEGS = 20
"""The most past exchanges a leg is given (the latest ones)."""
SESSIONS_UNREADABLE = "subagent.sessions_unreadable"
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
            return [Session(**item) for item in data["sessions"]]
        except FileNotFoundError:
            return []
        except (ValueError, TypeError, KeyError) as exc:  # only a hand edit can do this: the file is replaced whole
            raise ToolCallError(SESSIONS_UNREADABLE, f"{self.path} is not a subagent sessions file tooldeck can read "
                                f"({type(exc).__name__}: {exc}); it was changed outside tooldeck. Move it aside to "
                                "start with no named sessions, or mend it by hand.") from exc

    @contextmanager
    def _locked(self) -> Iterator[list[Session]]:
        with exclusive(self.path.with_suffix(".lock")):
            sessions = self._read()
            yield sessions
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8") as out:
                out.write(json.dumps({"sessions": [asdict(s) for s in sessions]}, indent=2))
                out.flush()
                os.fsync(out.fileno())
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

    def history_path(self, session_id: str) -> Path:
        if not valid_id(session_id):
            raise ValueError(f"session id {session_id!r} must be 1-64 letters, digits, `-` or `_`")
        return self.path.parent / HISTORY / f"{session_id}.jsonl"

    def history(self, session_id: str, limit: int = HISTORY_LEGS) -> list[tuple[str, str]]:
        """The session's past (task, answer) exchanges a new leg continues: from the last `new` leg on, the
        latest `limit`. A torn last line (a crash while writing) and lines that are not an exchange are skipped."""
        try:
            data = self.history_path(session_id).read_bytes()
        except FileNotFoundError:
            return []
        exchanges: list[tuple[str, str]] = []
        for line in data.split(b"\n")[:-1]:  # the part after the last newline is unfinished
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if not isinstance(item, dict) or not isinstance(item.get("task"), str) \
                    or not isinstance(item.get("answer"), str):
                continue
            if item.get("new") is True:
                exchanges.clear()
            exchanges.append((item["task"], item["answer"]))
        return exchanges[-limit:] if limit > 0 else []

    def remember(self, session_id: str, task: str, answer: str, *, new: bool, run_id: str, model: str) -> None:
        """Append a completed leg's exchange to the session's conversation (`new`: the conversation starts
        over with it)."""
        path = self.history_path(session_id)
        line = json.dumps({"task": task, "answer": answer, "new": new, "run_id": run_id, "model": model,
                           "at": time.time()}, ensure_ascii=False).encode("utf-8") + b"\n"
        with exclusive(self.path.with_suffix(".lock")):
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":  # a torn line of a crash: drop it first
                    os.ftruncate(fd, os.pread(fd, size, 0).rfind(b"\n") + 1)
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def describe(self) -> tuple[str, list[dict[str, Any]]]:
        sessions = self.list()
        if not sessions:
            return ("No named subagent sessions. A leg given `name` and `system_prompt` creates one; later legs "
                    "with that `name` reuse its role.", [])
        lines = [f"- {s.name} (session={s.id}, model {s.model}, {s.legs} leg(s)): {' '.join(s.role.split())[:200]}"
                 for s in sessions]
        return "\n".join(lines), [asdict(s) for s in sessions]
