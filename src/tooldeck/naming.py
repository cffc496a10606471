"""Model-facing call names: valid and unique for each provider protocol, on any input.

`allocate` is public API. The rules per protocol (reference/peers.md §3.1):

| protocol  | characters          | first character     | max |
|-----------|---------------------|---------------------|-----|
| openai    | A-Z a-z 0-9 _ -     | any of those        | 64  |
| anthropic | A-Z a-z 0-9 _ -     | any of those        | 64  |
| mistral   | A-Z a-z 0-9 _ -     | any of those        | 64  |
| gemini    | A-Z a-z 0-9 _ -     | letter or `_`       | 63  |
| bedrock   | A-Z a-z 0-9 _       | letter              | 64  |

Gemini's documented limit is 64 but older endpoints reject 64; 63 passes both. Bedrock covers
Bedrock Agents (no hyphen, letter first), which also satisfies Converse. Uniqueness is checked
case-insensitively, so no two names differ only in case (some hosts fold case).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

PROTOCOLS = ("openai", "anthropic", "gemini", "bedrock", "mistral")


@dataclass(frozen=True, slots=True)
class NameRule:
    invalid_char: re.Pattern[str]
    max_len: int
    first_ok: re.Pattern[str] | None
    first_prefix: str

    def is_valid(self, name: str) -> bool:
        return (
            0 < len(name) <= self.max_len
            and not self.invalid_char.search(name)
            and (self.first_ok is None or bool(self.first_ok.match(name)))
        )


_DASHED = re.compile(r"[^A-Za-z0-9_-]")
RULES: dict[str, NameRule] = {
    "openai": NameRule(_DASHED, 64, None, ""),
    "anthropic": NameRule(_DASHED, 64, None, ""),
    "mistral": NameRule(_DASHED, 64, None, ""),
    "gemini": NameRule(_DASHED, 63, re.compile(r"[A-Za-z_]"), "_"),
    "bedrock": NameRule(re.compile(r"[^A-Za-z0-9_]"), 64, re.compile(r"[A-Za-z]"), "t_"),
}

MCP_PREFIX = "mcp__"
MCP_SEPARATOR = "__"
MCP_SERVER_SHARE = 20
_MCP_SEGMENT_INVALID = re.compile(r"[^A-Za-z0-9-]")
_UNDERSCORE_RUN = re.compile(r"_+")


def rule_for(protocol: str) -> NameRule:
    try:
        return RULES[protocol]
    except KeyError:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}") from None


def sanitize(name: str, protocol: str = "openai") -> str:
    """Map every disallowed character to `_` and fix the first character; never empty."""
    rule = rule_for(protocol)
    clean = rule.invalid_char.sub("_", name) or "tool"
    if rule.first_ok is not None and not rule.first_ok.match(clean):
        clean = rule.first_prefix + clean
    return clean


def builtin_call_name(native: str) -> str:
    """`workspace.read_file` → `workspace_read_file` (fixed, the same for every protocol)."""
    return native.replace(".", "_")


def _mcp_segment(text: str, fallback: str) -> str:
    seg = _UNDERSCORE_RUN.sub("_", _MCP_SEGMENT_INVALID.sub("_", text)).strip("_")
    return seg or fallback


def mcp_model_name(server: str, tool: str, protocol: str = "openai") -> str:
    """`mcp__<server>__<tool>`, shortened to fit: the server part gives way first (to at most 20)."""
    available = rule_for(protocol).max_len - len(MCP_PREFIX) - len(MCP_SEPARATOR)
    srv, tl = _mcp_segment(server, "server"), _mcp_segment(tool, "tool")
    if len(srv) + len(tl) > available:
        server_len = min(len(srv), MCP_SERVER_SHARE, available // 2)
        tool_len = min(len(tl), available - server_len)
        server_len = min(len(srv), available - tool_len)
        srv, tl = srv[:server_len], tl[:tool_len]
    return f"{MCP_PREFIX}{srv}{MCP_SEPARATOR}{tl}"


def allocate_one(name: str, used: set[str], protocol: str = "openai") -> str:
    """Sanitise, truncate at a character boundary, and add `__2`, `__3`… on a clash.

    `used` holds case-folded names and is updated with the chosen one.
    """
    rule = rule_for(protocol)
    base = sanitize(name, protocol)
    n = 1
    while True:
        suffix = "" if n == 1 else f"__{n}"
        candidate = base[: rule.max_len - len(suffix)] + suffix
        key = candidate.casefold()
        if key not in used:
            used.add(key)
            return candidate
        n += 1


def allocate(names: Iterable[str], protocol: str = "openai", reserved: Iterable[str] = ()) -> list[str]:
    """Allocate a call name for each of `names`, in order, avoiding `reserved` and each other."""
    used = {sanitize(r, protocol).casefold() for r in reserved}
    return [allocate_one(n, used, protocol) for n in names]
