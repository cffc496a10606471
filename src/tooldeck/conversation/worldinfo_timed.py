"""World-info timed effects (`sticky`, `cooldown`, `delay`, in messages) with SillyTavern's semantics
(docs/conversation.md#timed-effects). Pure: the chat's state and the entries in, what applies to one
activation and the state after it out; conversation/binding.py keeps the state per chat.

An effect set when the chat had `start` messages lasts while it has fewer than `end`:
- `sticky` N: an entry activated at `count` messages stays active (without its keys, its roll or a
  lost group) until the chat has count + N; then, if it has a `cooldown`, its cooldown starts there;
- `cooldown` N: an entry activated at `count` cannot activate again (unless sticky) until count + N;
- `delay` N: the entry cannot activate while the chat has fewer than N messages.
An effect set at `count` that is not protected is dropped when the chat has `count` or fewer messages
again (the same turn activated anew, or a chat cut short); the cooldown a sticky effect leaves behind
is protected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tooldeck.conversation.worldinfo_parse import Entry


@dataclass(frozen=True, slots=True)
class Effect:
    start: int
    end: int
    protected: bool = False


@dataclass(frozen=True, slots=True)
class TimedState:
    """The effects of one chat, by entry ref."""

    sticky: dict[str, Effect] = field(default_factory=dict)
    cooldown: dict[str, Effect] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {kind: {ref: [e.start, e.end, e.protected] for ref, e in effects.items()}
                for kind, effects in (("sticky", self.sticky), ("cooldown", self.cooldown))}

    @classmethod
    def from_dict(cls, data: Any) -> TimedState:
        """What `to_dict` wrote; anything else in it is dropped (as SillyTavern cleans bad metadata)."""
        kinds: list[dict[str, Effect]] = []
        for kind in ("sticky", "cooldown"):
            raw = data.get(kind) if isinstance(data, dict) else None
            effects: dict[str, Effect] = {}
            for ref, value in (raw.items() if isinstance(raw, dict) else ()):
                if isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value[:2]) \
                        and isinstance(value[2], bool):
                    effects[ref] = Effect(value[0], value[1], value[2])
            kinds.append(effects)
        return cls(*kinds)


@dataclass(frozen=True, slots=True)
class Timed:
    """What applies to an activation of a chat with `count` messages."""

    count: int
    state: TimedState
    """The chat's effects once the ended ones are dropped (before this activation adds its own)."""
    sticky: Mapping[str, Effect] = field(default_factory=dict)
    cooldown: Mapping[str, Effect] = field(default_factory=dict)
    delayed: Mapping[str, int] = field(default_factory=dict)
    """Ref → the message count the entry waits for."""

    def blocked(self, ref: str) -> str | None:
        """Why the entry cannot activate now (delay, or cooldown and not sticky), or None."""
        if ref in self.delayed:
            return f"delay: the chat has {self.count} of the {self.delayed[ref]} messages it waits for"
        if ref in self.cooldown and ref not in self.sticky:
            return f"cooldown until the chat has {self.cooldown[ref].end} messages (it has {self.count})"
        return None


def current(state: TimedState, entries: Iterable[Entry], count: int) -> Timed:
    """The effects that apply with `count` messages: ended ones dropped (a sticky one's cooldown
    starting), the rest in force."""
    by_ref = {e.ref: e for e in entries}
    sticky, cooldown = dict(state.sticky), dict(state.cooldown)
    active: dict[str, dict[str, Effect]] = {"sticky": {}, "cooldown": {}}
    for kind, effects in (("sticky", sticky), ("cooldown", cooldown)):
        for ref, effect in list(effects.items()):
            entry = by_ref.get(ref)
            if count <= effect.start and not effect.protected:  # the chat did not advance: set anew
                del effects[ref]
            elif entry is None:  # a book no longer loaded: kept until it would have ended
                if count >= effect.end:
                    del effects[ref]
            elif not getattr(entry, kind):  # the entry no longer has this effect
                del effects[ref]
            elif count >= effect.end:
                del effects[ref]
                if kind == "sticky" and entry.cooldown:
                    cooldown[ref] = Effect(count, count + entry.cooldown, True)
            else:
                active[kind][ref] = effect
    delayed = {ref: e.delay for ref, e in by_ref.items() if e.delay and count < e.delay}
    return Timed(count, TimedState(sticky, cooldown), active["sticky"], active["cooldown"], delayed)


def after(timed: Timed, activated: Iterable[Entry]) -> TimedState:
    """The chat's effects once `activated` (the active entries) are: each sticky or cooldown entry
    without that effect yet gets it, from this message count."""
    sticky, cooldown = dict(timed.state.sticky), dict(timed.state.cooldown)
    for entry in activated:
        if entry.sticky and entry.ref not in sticky:
            sticky[entry.ref] = Effect(timed.count, timed.count + entry.sticky)
        if entry.cooldown and entry.ref not in cooldown:
            cooldown[entry.ref] = Effect(timed.count, timed.count + entry.cooldown)
    return TimedState(sticky, cooldown)
