"""Scheduled agent runs (docs/schedules.md): a schedule runs a skill of the home or a task, once
(`+5m`, `15:04`, `2006-01-02 15:04`, RFC 3339) or on a 5-field cron expression.

- `timespec.py`: what a `time` means and when a cron expression fires next (pure);
- `clock.py`: the injectable clock and the zone wall-clock times are read in;
- `store.py`: the schedules and their fires in `<home>/records.sqlite`, each fire claimed once;
- `runner.py`: claim what is due and start an agent run for each (`tooldeck serve`, `tooldeck schedules
  run-due`);
- `errors.py`: the `schedules.*` codes.

The `schedules` tool is `builtins/schedules.py`, the CLI `cli/schedules_cmd.py`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Loaded on first use: the `schedules` tool imports `schedules.errors` with the catalog, and `tooldeck call`
# must not pay for the store, the runner or cronsim (docs/cli.md, start-up).
_WHERE = {"Clock": "clock", "ManualClock": "clock", "SystemClock": "clock", "ScheduleError": "errors",
          "FireOutcome": "runner", "Runner": "runner", "serving": "runner", "Fire": "store", "Schedule": "store",
          "ScheduleStore": "store", "When": "timespec", "next_fire": "timespec", "parse_when": "timespec"}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'tooldeck.schedules' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tooldeck.schedules.{_WHERE[name]}"), name)
