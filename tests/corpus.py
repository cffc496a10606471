"""Real tool definitions for tests and benchmarks: the BFCL v4 function corpus (PyPI `bfcl-eval`)."""

from __future__ import annotations

import importlib.resources
import json
from functools import cache
from typing import Any

_SINGLE_TURN_SKIP = ("multi_turn", "memory", "web_search", "format_sensitivity")


@cache
def bfcl_functions() -> tuple[dict[str, Any], ...]:
    """Every single-turn BFCL v4 function definition (name, description, parameters), first of each name."""
    root = importlib.resources.files("bfcl_eval") / "data"
    seen: dict[str, dict[str, Any]] = {}
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".json") or any(s in entry.name for s in _SINGLE_TURN_SKIP):
            continue
        for line in entry.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            functions = json.loads(line).get("function") or []
            for fn in functions if isinstance(functions, list) else [functions]:
                seen.setdefault(fn["name"], fn)
    return tuple(seen.values())
