"""Which world-info entries the recent messages activate, with SillyTavern's semantics
(docs/conversation.md#activation). Pure: books and messages in, the activation out.

The scan runs in passes. Pass 0 scans the newest `scan_depth` messages (an entry's own `scanDepth`
wins). Each later pass (a recursion, at most `recursion` of them) scans those messages plus the
content of every entry accepted so far that does not `preventRecursion`; an `excludeRecursion` entry
is not looked at in those passes, a `delayUntilRecursion` entry only in those (from its delay level
on). In every pass:

1. the entries not yet accepted that match (constant, or the keys and `selectiveLogic`), taken
   constant first, then by `order` descending (SillyTavern's priority), then book and place;
2. inclusion groups: a group with an accepted member loses its new contenders; otherwise, of two or
   more contenders, the `groupOverride` one with the highest order wins, else one drawn by
   `groupWeight`;
3. probability: an entry is kept when its roll (0-100) is under its `probability`; a failed entry is
   out for the whole activation;
4. the token budget (chars/4 per entry, rounded up): an entry that would bring the total to the
   budget or past it overflows the budget; then no further entry is accepted (but `ignoreBudget`
   ones) and recursion stops.

Recursion goes on while a pass accepted an entry that does not `preventRecursion`, else while delay
levels are left (one more pass per level).
Every entry is accepted at most once, so cycles end. The rolls come from SHA-256 of the seed (the run
id), the entry ref or group name: the same run activates the same entries in any process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo_parse import AND_ALL, AND_ANY, LOGIC_NAMES, NOT_ALL, NOT_ANY, Book, Entry, Key
from tooldeck.conversation.worldinfo_scan import Scanned, Texts, clean
from tooldeck.conversation.worldinfo_settings import DEFAULT_RECURSION
from tooldeck.conversation.worldinfo_timed import Timed

CHARS_PER_TOKEN: Final = 4


def estimate_tokens(text: str) -> int:
    """The token estimate of the budget: characters / 4, rounded up (no tokenizer is loaded)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def unit(seed: str, *parts: str) -> float:
    """A number in [0, 1) fixed by `seed` and `parts` (no process-dependent hashing)."""
    joined = "\x1f".join((seed, *parts)).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(joined).digest()[:8], "big") / 2 ** 64


@dataclass(frozen=True, slots=True)
class Activated:
    ref: str
    book: str
    uid: str
    comment: str
    order: int
    reason: str
    content: str
    skipped: str | None = None
    """Why an entry that matched is not active (budget, probability, group); None: active."""

    def to_dict(self) -> dict[str, Any]:
        out = {"ref": self.ref, "book": self.book, "uid": self.uid, "comment": self.comment, "order": self.order,
               "reason": self.reason, "content": self.content}
        if self.skipped is not None:
            out["skipped"] = self.skipped
        return out


def match(entry: Entry, text: Scanned) -> str | None:
    """Why `entry` matches the text (its reason), or None."""
    if entry.constant:
        return "constant"
    primary = next((k for k in entry.keys if k.found_in(text)), None)
    return None if primary is None else _secondary(entry, primary, text)


def _secondary(entry: Entry, primary: Key, text: Scanned) -> str | None:
    """The reason of an entry whose `primary` key occurs in `text`, or None if `selectiveLogic` says no."""
    if not entry.selective or not entry.secondary:
        return f"key {primary.text!r}"
    return _logic(entry, primary, [k.found_in(text) for k in entry.secondary])


def _logic(entry: Entry, primary: Key, found: Sequence[bool]) -> str | None:
    ok = {AND_ANY: any(found), NOT_ALL: not all(found), NOT_ANY: not any(found), AND_ALL: all(found)}[entry.logic]
    return f"key {primary.text!r}, secondary {LOGIC_NAMES[entry.logic]}" if ok else None


@dataclass(frozen=True, slots=True)
class _Seen:
    """What an entry's keys found in a window (depth, buffer size)."""

    window: tuple[int, int]
    primary: int | None
    """The index of its first primary key found there; None: none."""
    secondary: tuple[bool, ...] | None
    """Which secondary keys were found there; None: not looked for."""


class _Matcher:
    """`match` over a pass's window (depth, buffer size), with the recursion fast path. A window only
    grows from pass to pass (more of the recursion buffer), so what an entry's keys found in an
    earlier window they still find: only the parts added since are searched, for the primary keys
    before the first one found (the first found in the whole window is the reason's) and for the
    secondary keys not found yet; NOT logic then reads the flags of the whole window. A window that
    is not a superset (a min-activations pass reads no buffer) is searched whole."""

    def __init__(self, texts: Texts, incremental: bool) -> None:
        self.texts = texts
        self.incremental = incremental
        self._seen: dict[str, _Seen] = {}

    def __call__(self, entry: Entry, window: tuple[int, int]) -> str | None:
        if entry.constant:
            return "constant"
        keys = entry.keys
        full = self.texts.get(*window)
        was = self._seen.get(entry.ref) if self.incremental else None
        if was is not None and was.window[0] <= window[0] and was.window[1] <= window[1]:
            text = self.texts.added(was.window, window)
            before = len(keys) if was.primary is None else was.primary
            primary = next((i for i in range(before) if keys[i].found_in(text)), was.primary)
        else:
            was, text = None, full
            primary = next((i for i, k in enumerate(keys) if k.found_in(full)), None)
        if primary is None or not entry.selective or not entry.secondary:
            self._seen[entry.ref] = _Seen(window, primary, None)
            return None if primary is None else f"key {keys[primary].text!r}"
        if was is not None and was.secondary is not None:
            found = tuple(f or k.found_in(text) for f, k in zip(was.secondary, entry.secondary, strict=True))
        else:
            found = tuple(k.found_in(full) for k in entry.secondary)
        self._seen[entry.ref] = _Seen(window, primary, found)
        return _logic(entry, keys[primary], found)


@dataclass(slots=True)
class _Hit:
    book: int
    entry: Entry
    reason: str


def _group_losers(hits: list[_Hit], active_groups: set[str], sticky: Container[str], seed: str,
                  step: int) -> dict[str, str]:
    """Inclusion groups: the refs of this pass's contenders that lose, with why."""
    members: dict[str, list[_Hit]] = {}
    for hit in hits:
        for name in hit.entry.groups:
            members.setdefault(name, []).append(hit)
    losers: dict[str, str] = {}
    for name, group in members.items():
        held = [h.entry.ref for h in group if h.entry.ref in sticky]
        if held:  # sticky members keep the group: they all stay, the others lose
            for hit in group:
                if hit.entry.ref not in sticky:
                    losers.setdefault(hit.entry.ref, f"group {name!r}: {', '.join(held)} is sticky")
            continue
        if name in active_groups:
            for hit in group:
                losers.setdefault(hit.entry.ref, f"group {name!r} has an active entry already")
            continue
        if len(group) < 2:
            continue
        overrides = [h for h in group if h.entry.group_override]
        if overrides:
            winner = max(overrides, key=lambda h: h.entry.order)  # the first of the highest order
            how = "by groupOverride and order"
        else:
            total = sum(h.entry.group_weight for h in group)
            roll = total * unit(seed, "group", name, str(step))
            winner, running = group[-1], 0.0
            for hit in group:
                running += hit.entry.group_weight
                if roll <= running:
                    winner = hit
                    break
            how = f"by groupWeight (rolled {roll:.1f} of {total:g})"
        for hit in group:
            if hit is not winner:
                losers.setdefault(hit.entry.ref, f"group {name!r}: {winner.entry.ref} won {how}")
    return losers


INITIAL, RECURSION, MIN_ACTIVATIONS = 0, 1, 2


def activate(books: Sequence[Book], messages: Sequence[Message], scan_depth: int, *,
             recursion: int = DEFAULT_RECURSION, budget: int | None = None, seed: str = "",
             min_activations: int = 0, min_depth_max: int = 0, timed: Timed | None = None,
             incremental: bool = True) -> list[Activated]:
    """The activation: the active entries by `order` ascending (then book, place), then the entries
    that matched but were skipped (`skipped` says why), in the same order.

    `min_activations`: while fewer entries are active and no other pass is due, scan one message
    deeper (up to `min_depth_max` messages, 0: all). `timed`: the timed effects in force (sticky,
    cooldown, delay). `incremental=False` turns the recursion fast path off (every pass matches every
    entry against its whole window), for tests."""
    pool = sorted(((b, e) for b, book in enumerate(books) for e in book.entries if not e.disabled),
                  key=lambda be: (-be[1].order, be[0], be[1].position))
    texts = Texts(messages)
    matcher = _Matcher(texts, incremental)
    sticky: Container[str] = timed.sticky if timed is not None else ()
    accepted: dict[str, _Hit] = {}
    skipped: dict[str, tuple[_Hit, str]] = {}
    failed: set[str] = set()
    active_groups: set[str] = set()
    levels = sorted({e.delay_level for _, e in pool if e.delay_level})
    level = levels.pop(0) if levels else 0
    deepest = min(len(messages), min_depth_max) if min_depth_max else len(messages)
    used, overflowed, step, skew, state, n = 0, False, 0, 0, INITIAL, 0
    while True:
        hits: list[_Hit] = []
        size = len(texts.buffer) if state == RECURSION else 0  # a min-activations pass reads messages only
        for b, entry in pool:
            ref = entry.ref
            if ref in accepted or ref in failed:
                continue
            held = ref in sticky
            if not held and ((entry.delay_level > level or entry.exclude_recursion) if state == RECURSION
                             else entry.delay_level):
                continue
            depth = scan_depth + skew if entry.scan_depth is None else entry.scan_depth
            blocked = timed.blocked(ref) if timed is not None else None
            if blocked is not None:  # listed with why when it would have matched
                reason = matcher(entry, (depth, size))
                if reason is not None and ref not in skipped:
                    skipped[ref] = (_Hit(b, entry, reason), blocked)
                continue
            if held and not entry.constant:
                effect = timed.sticky[ref]  # type: ignore[union-attr]
                reason = f"sticky (activated with {effect.start} messages, until {effect.end})"
            else:
                reason = matcher(entry, (depth, size))
            if reason is not None:
                if state == RECURSION:
                    reason += f", recursion {step}"
                elif state == MIN_ACTIVATIONS:
                    reason += f", min activations (depth {scan_depth + skew})"
                hits.append(_Hit(b, entry, reason))
        hits.sort(key=lambda h: not h.entry.constant)  # stable: the priority order within each kind
        losers = _group_losers(hits, active_groups, sticky, seed, n)
        recursed = False
        for hit in hits:
            entry = hit.entry
            if entry.ref in losers:
                skipped.setdefault(entry.ref, (hit, losers[entry.ref]))  # the first reason says the most
                continue
            if overflowed and not entry.ignore_budget:  # before its roll, as in SillyTavern
                skipped[entry.ref] = (hit, f"budget: the budget of {budget} overflowed before it ({used} used)")
                continue
            if entry.probability < 100 and entry.ref not in sticky:  # a sticky entry is not rolled again
                roll = 100 * unit(seed, "probability", entry.ref)
                if not roll < entry.probability:
                    failed.add(entry.ref)
                    skipped[entry.ref] = (hit, f"probability {entry.probability:g}%: rolled {roll:.1f}")
                    continue
                hit.reason += f", probability {entry.probability:g}% (rolled {roll:.1f})"
            cost = estimate_tokens(entry.content)
            if budget is not None and not entry.ignore_budget and used + cost >= budget:
                overflowed = True  # SillyTavern's test: reaching the budget is overflowing it
                skipped[entry.ref] = (hit, f"budget: {used} + {cost} tokens reach the budget of {budget}")
                continue
            used += cost
            accepted[entry.ref] = hit
            skipped.pop(entry.ref, None)
            active_groups.update(entry.groups)
            if not entry.prevent_recursion:  # even without content: another pass, as in SillyTavern
                recursed = True
                if entry.content:
                    texts.buffer.append(clean(entry.content))
        if overflowed:
            break
        if step < recursion and (recursed or (state == MIN_ACTIVATIONS and texts.buffer)):
            state = RECURSION  # a min-activations pass is followed by a recursion pass, as in SillyTavern
        elif len(accepted) < min_activations and scan_depth + skew < deepest:
            state, skew = MIN_ACTIVATIONS, skew + 1
        elif step < recursion and levels:
            state, level = RECURSION, levels.pop(0)
        else:
            break
        step += state == RECURSION
        n += 1
    return _result(accepted.values(), None) + _result((h for h, _ in skipped.values()),
                                                       {r: why for r, (_, why) in skipped.items()})


def _result(hits: Any, why: dict[str, str] | None) -> list[Activated]:
    ordered = sorted(hits, key=lambda h: (h.entry.order, h.book, h.entry.position))
    return [Activated(h.entry.ref, h.entry.book, h.entry.uid, h.entry.comment, h.entry.order, h.reason,
                      h.entry.content if why is None else "", None if why is None else why[h.entry.ref])
            for h in ordered]
