"""Which process owns an unfinished call, and whether that process is still alive.

A call is stamped with its writer's host, pid and a start token (boot id + the process start time
from `/proc`), so a pid reused after a reboot or by a later process is not mistaken for the owner.
Liveness can only be judged on the same host; a call owned by another host is treated as live.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class Owner:
    host: str
    pid: int
    token: str


@cache
def _boot_id() -> str:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip()[:8]
    except OSError:
        return ""


def _proc_start(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) of a process from /proc, or None if it does not exist."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return ("?", "")
    fields = text[text.rfind(")") + 2:].split()
    # fields[0] is the state (field 3 of stat), fields[19] the start time (field 22).
    return fields[0], fields[19] if len(fields) > 19 else ""


def _token(pid: int) -> str:
    info = _proc_start(pid)
    start = info[1] if info else ""
    return f"{_boot_id()}:{start}" if start else ""


def current() -> Owner:
    """The calling process (computed per call so a forked child gets its own identity)."""
    pid = os.getpid()
    return Owner(socket.gethostname(), pid, _token(pid))


def is_alive(owner: Owner) -> bool:
    """False only when the owner is certainly gone: same host, and the pid is absent, a zombie,
    or now belongs to a process with another start token (or the machine was rebooted)."""
    if owner.host != socket.gethostname():
        return True
    if owner.pid == os.getpid():
        return owner.token == _token(owner.pid) or not owner.token
    if owner.token and _boot_id() and not owner.token.startswith(_boot_id() + ":"):
        return False
    info = _proc_start(owner.pid)
    if info is not None and _PROC.is_dir():
        state, start = info
        if state == "Z":
            return False
        return not (owner.token and start and owner.token != f"{_boot_id()}:{start}")
    if _PROC.is_dir() and (_PROC / "self").exists():
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
