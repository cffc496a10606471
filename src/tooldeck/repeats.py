"""Repeated-call detection: a model stuck calling the same tool with the same arguments.

The gate asks `RepeatGuard.check` about every call whose arguments are valid, before permission
(a human is never asked about a call that would be refused). A call is refused with
`tool.repeated_call` when

- it would be the `limit + 1`-th call in a row of one tool with the same canonical arguments
  (Profile `max_identical_calls`, default 3: three identical calls run, the fourth is refused), or
- it completes an A-B-A-B cycle: two different calls alternating, each with the same arguments.

A call whose results changed from one call to the next is progress (polling a background task, a
random draw), not a loop: it is never refused. Streaks count model turns (the calls of one turn are
issued together), and the guard lives in the run's state, so a streak spans the invocations of one
run. docs/configuration.md, "Repeated calls".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from tooldeck.core.jsonvalue import shown
from tooldeck.core.results import AgentToolResult

Key = tuple[str, int]
_PREVIEW = 400
_RESULTS_KEPT = 64
"""results remembered beyond the calls the history and streaks still name"""


def canonical(args: dict[str, Any]) -> int:
    """A digest of the arguments that ignores key order: two calls are identical when these are equal.
    Built from the values' own hashes (a string's is computed once and cached), never by encoding the
    arguments: a call with a 100 MB argument costs no copy of it. Two different argument objects share a
    digest with a chance of 2⁻⁶⁴; such a call would be refused as a repeat, nothing worse."""
    try:
        return _digest(args)
    except RecursionError:  # deeper than any JSON the gate admits: never equal to another call
        return id(args)


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _digest(value: Any) -> int:
    if type(value) is dict and _SCALARS.issuperset(map(type, value.values())):
        # the common case, an object of plain values, hashed in C; the type keeps 1, 1.0 and True apart
        return hash((dict, frozenset(zip(value, map(type, value.values()), value.values(), strict=True))))
    if isinstance(value, dict):
        return hash((dict, frozenset((k, _digest(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):  # a host's tuple is the JSON array it stands for
        return hash((list, tuple(_digest(v) for v in value)))
    try:
        return hash((type(value), value))
    except TypeError:  # a host object with no hash: never equal to another call's arguments
        return id(value)


@dataclass(slots=True)
class _Seen:
    last: int
    """hash of the latest result's text"""
    varied: bool
    """two results of this call differed: it is a poll or a random draw, not a loop"""
    text: str


@dataclass
class RepeatGuard:
    """One run's memory of its calls, counted in model turns: the calls of one turn are issued together,
    without seeing each other's results, so a call made twice in one turn counts once."""

    turn: int = 0
    streaks: dict[Key, int] = field(default_factory=dict)
    """this turn's calls: consecutive turns each was called in, this one included"""
    previous: dict[Key, int] = field(default_factory=dict)
    history: deque[tuple[Key, str, int]] = field(default_factory=lambda: deque(maxlen=3))
    """the last calls in distinct positions: key, call name, turn"""
    results: dict[Key, _Seen] = field(default_factory=dict)
    pending: dict[str, Key] = field(default_factory=dict)
    """call id → key of the calls let through and not yet observed"""

    def begin_turn(self) -> None:
        self.turn += 1
        self.previous, self.streaks = self.streaks, {}

    def check(self, call_id: str, tool_id: str, call_name: str, args: dict[str, Any], limit: int) -> str | None:
        """None to let the call through, else the refusal's text."""
        key = (tool_id, canonical(args))
        if key in self.streaks:  # the same call again in this turn
            self.pending[call_id] = key
            return None
        streak = self.streaks[key] = self.previous.get(key, 0) + 1
        history = self.history
        other = history[-1] if _cycle(history, key, self.turn) else None
        history.append((key, call_name, self.turn))
        if streak > limit and not self._varied(key):
            return self._loop_message(call_name, streak - 1, key)
        if other is not None and not self._varied(key) and not self._varied(other[0]):
            return self._cycle_message(call_name, other[1], key)
        self.pending[call_id] = key
        return None

    def observe(self, results: Iterable[AgentToolResult | None]) -> None:
        """The results of calls this guard let through (others are ignored)."""
        for result in results:
            if result is None:
                continue
            key = self.pending.pop(result.call_id, None)
            if key is None:
                continue
            digest = hash(result.content)
            seen = self.results.get(key)
            if seen is None:
                self.results[key] = _Seen(digest, False, result.content)
            elif seen.last != digest:
                seen.last, seen.varied, seen.text = digest, True, result.content
        if len(self.results) > _RESULTS_KEPT:  # pruned in batches: a run of distinct calls pays it once in 48
            recent = {key for key, _, _ in self.history} | self.streaks.keys() | self.previous.keys()
            for key in [k for k in self.results if k not in recent]:
                del self.results[key]

    def _varied(self, key: Key) -> bool:
        seen = self.results.get(key)
        return seen is not None and seen.varied

    def _received(self, key: Key) -> str:
        seen = self.results.get(key)
        if seen is None:
            return "Its result is in the earlier calls of this conversation."
        return f"The last call returned:\n{shown(seen.text, _PREVIEW)}"

    def _loop_message(self, call_name: str, times: int, key: Key) -> str:
        return (f"`{call_name}` was not run: it was already called {times} times in a row with these same "
                f"arguments, and calling it again will not give anything new. {self._received(key)}\n"
                "Use what you received, or take a different step: change the arguments, use another tool, or "
                "answer.")

    def _cycle_message(self, call_name: str, other: str, key: Key) -> str:
        return (f"`{call_name}` was not run: it alternates with `{other}` (A, B, A, B), each with the same arguments "
                f"as before, which will not give anything new. {self._received(key)}\n"
                "Use what you received, or take a different step: change the arguments, use another tool, or "
                "answer.")


def _cycle(history: deque[tuple[Key, str, int]], key: Key, turn: int) -> bool:
    """`key` after B, A, B (A ≠ B) gives B, A, B, A, each in a turn of its own."""
    if len(history) < 3:
        return False
    (b, _, t1), (a, _, t2), (b2, _, t3) = history
    return b == b2 and a == key and a != b and t1 < t2 < t3 < turn
