"""What changed between a tool's pinned definition and the one its server lists now, field by field.

`changes(old, new)` walks both definitions (`pins.definition`) as JSON: objects key by key, each leaf
(a string, a number, a list such as `required`) compared whole; a change is named by its JSON pointer
(`/description`, `/inputSchema/properties/path/description`). `render(change)` gives readable lines:
a text field is shown line by line (`-` old, `+` new, with invisible characters spelled out), any other
value as compact JSON.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

from tooldeck.sources.mcp.poisoning import visible

_MISSING = object()
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Change:
    field: str
    """A JSON pointer into the definition (`/description`, `/inputSchema/required`)."""
    kind: Literal["added", "removed", "changed"]
    old: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind, "old": self.old, "new": self.new}


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    out: list[Change] = []
    _walk(old, new, "", out, 0)
    return out


def fields(found: list[Change]) -> list[str]:
    """The top-level fields a list of changes touches (`description`, `inputSchema`), in order."""
    seen: list[str] = []
    for change in found:
        top = change.field.split("/")[1] if change.field.count("/") else change.field
        if top not in seen:
            seen.append(top)
    return seen


def _walk(old: Any, new: Any, path: str, out: list[Change], depth: int) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and depth < _MAX_DEPTH:
        for key in [*old, *(k for k in new if k not in old)]:
            sub = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            a, b = old.get(key, _MISSING), new.get(key, _MISSING)
            if a is _MISSING:
                out.append(Change(sub, "added", None, b))
            elif b is _MISSING:
                out.append(Change(sub, "removed", a, None))
            else:
                _walk(a, b, sub, out, depth + 1)
        return
    if old != new or type(old) is not type(new):
        out.append(Change(path or "/", "changed", old, new))


def render(change: Change) -> list[str]:
    """Readable lines for one change (no trailing newlines; invisible characters escaped)."""
    head = f"{change.field} ({change.kind})"
    lines = [head]
    if change.kind == "changed" and isinstance(change.old, str) and isinstance(change.new, str):
        old_lines, new_lines = change.old.splitlines() or [""], change.new.splitlines() or [""]
        for line in difflib.ndiff(old_lines, new_lines):
            if line.startswith(("- ", "+ ")):
                lines.append(f"  {line[0]} {visible(line[2:])}")
        return lines
    if change.kind in ("changed", "removed"):
        lines.append(f"  - {_value(change.old)}")
    if change.kind in ("changed", "added"):
        lines.append(f"  + {_value(change.new)}")
    return lines


def _value(value: Any) -> str:
    if isinstance(value, str):
        return visible(value)
    return visible(json.dumps(value, ensure_ascii=False, sort_keys=True))
