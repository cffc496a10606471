"""The numbers that bound one shell call. One place, so the docs, the tool and the tests agree."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True, slots=True)
class ShellLimits:
    timeout_s: float = 30.0
    """Wall-clock budget of one call (the Profile's `shell_timeout_s`)."""
    stop_grace_s: float = 0.5
    """How long after its deadline (or a cancel) a call may take to stop by itself before its worker
    process is killed."""
    max_command_bytes: int = 128 * KIB
    max_stdout_bytes: int = 128 * KIB
    max_stderr_bytes: int = 128 * KIB
    max_commands: int = 100_000
    """Commands per call; bashkit's own per-instance ceiling is also 100 000."""
    max_loop_iterations: int = 100_000
    max_file_bytes: int = 64 * MIB
    """Largest file any shell write may produce (the file tools' `MAX_FILE_BYTES`): the worker
    process runs under `RLIMIT_FSIZE`, and the `python`/`js` file APIs check before they write."""
    js_memory_bytes: int = 64 * MIB
    js_stack_bytes: int = 1 * MIB
    python_memory_bytes: int = 128 * MIB
    python_max_os_calls: int = 100_000
    """File operations one `python` run may make (pydantic-monty's `max_suspensions`)."""
    max_script_bytes: int = 4 * MIB
    """Largest script or module file `python`/`js` will load."""

    def with_timeout(self, timeout_s: float) -> ShellLimits:
        return replace(self, timeout_s=timeout_s)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _NAMES}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShellLimits:
        return cls(**{k: v for k, v in data.items() if k in _NAMES})


_NAMES = frozenset(f.name for f in fields(ShellLimits))
