"""What a shell call came to: its status and result (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    EXITED = "exited"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(slots=True)
class ShellResult:
    status: Status
    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool
    error: str | None = None
    duration_s: float = 0.0
    killed: bool = False
    """The worker did not stop within the grace period and was killed."""
