"""The `schedules.*` error codes (docs/schedules.md#errors) and the exception that carries them.

`ScheduleError` is a `ToolCallError`: raised inside the `schedules` tool it becomes an error result the
model can act on; the CLI prints its code and message and exits 2; the library raises it as it is.
"""

from __future__ import annotations

from typing import Final

from tooldeck.core.errors import ToolCallError

UNKNOWN_MODE: Final = "schedules.unknown_mode"
TARGET_INVALID: Final = "schedules.target_invalid"
FIELD_REQUIRED: Final = "schedules.field_required"
TIME_INVALID: Final = "schedules.time_invalid"
TIME_PAST: Final = "schedules.time_past"
CRON_INVALID: Final = "schedules.cron_invalid"
NOT_FOUND: Final = "schedules.not_found"
AMBIGUOUS: Final = "schedules.ambiguous"
SKILL_MISSING: Final = "schedules.skill_missing"
UNAVAILABLE: Final = "schedules.unavailable"
STORE_FAILED: Final = "schedules.store_failed"

CODES: Final = (UNKNOWN_MODE, TARGET_INVALID, FIELD_REQUIRED, TIME_INVALID, TIME_PAST, CRON_INVALID, NOT_FOUND,
                AMBIGUOUS, SKILL_MISSING, UNAVAILABLE, STORE_FAILED)


class ScheduleError(ToolCallError):
    """Bad schedule input (a time, a target, an id) or a store that cannot be used; nothing was changed."""

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
