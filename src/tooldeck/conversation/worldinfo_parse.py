"""World-info books: SillyTavern world-info JSON → `Book`s of `Entry`s (docs/conversation.md#world-info).

A book is `{"entries": {"<uid>": entry, …}}` (or `entries` as a list). Every entry field SillyTavern's
activation uses is mapped (the table on the docs page); other fields (`position`, `depth`, `role`,
`automationId`, …) are ignored. A bad value of a mapped field is
`worldinfo.book_invalid` naming the book, the entry and the field; nothing is half-loaded.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import re2

from tooldeck.conversation.model import WI_BOOK_INVALID
from tooldeck.conversation.worldinfo_scan import SEPARATOR, Scanned
from tooldeck.core.errors import TooldeckError

AND_ANY, NOT_ALL, NOT_ANY, AND_ALL = 0, 1, 2, 3
LOGIC_NAMES: Final = {AND_ANY: "AND_ANY", NOT_ALL: "NOT_ALL", NOT_ANY: "NOT_ANY", AND_ALL: "AND_ALL"}
DEFAULT_ORDER: Final = 100
DEFAULT_WEIGHT: Final = 100
MAX_DELAY_LEVEL: Final = 1000
MAX_MESSAGES: Final = 1_000_000


def _options(case_sensitive: bool) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    options.case_sensitive = case_sensitive
    return options


@dataclass(frozen=True, slots=True)
class Key:
    text: str
    regex: Any = None
    """A compiled RE2 pattern for `/…/` keys and whole-word keys; None: a substring key."""
    case_sensitive: bool = False

    def found_in(self, text: Scanned) -> bool:
        """Whether the key occurs within one part of `text` (never across two)."""
        if self.regex is not None:
            search = self.regex.search
            return any(search(part) is not None for part in text.parts)
        if SEPARATOR in self.text:  # it could span a joint of the joined text: look part by part
            return any(self.text in (part if self.case_sensitive else part.lower()) for part in text.parts)
        return (self.text in text.joined) if self.case_sensitive else (self.text in text.lowered)


def compile_key(raw: str, case_sensitive: bool, whole_words: bool, where: str) -> Key:
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise TooldeckError(WI_BOOK_INVALID, f"{where}: key {raw!r} is not valid Unicode text (a lone "
                                             "surrogate)") from None
    if len(raw) > 2 and raw.startswith("/") and raw.rfind("/") > 0:
        end = raw.rfind("/")
        pattern, flags = raw[1:end], raw[end + 1:]
        if set(flags) <= set("gimsuy"):
            try:
                rx = re2.compile(pattern, _options("i" not in flags))  # a regex key follows its own flags
            except re2.error as exc:
                raise TooldeckError(WI_BOOK_INVALID, f"{where}: key {raw!r} is not a valid regular expression: "
                                                     f"{exc}") from None
            return Key(raw, rx)
    if whole_words and raw.strip() and " " not in raw.strip():
        escaped = re2.escape(raw.strip())
        rx = re2.compile(rf"(?:^|\W){escaped}(?:$|\W)", _options(case_sensitive))
        return Key(raw, rx)
    return Key(raw if case_sensitive else raw.lower(), None, case_sensitive)


@dataclass(frozen=True, slots=True)
class Entry:
    book: str
    uid: str
    position: int
    """The entry's place in its book (ties of `order` keep it)."""
    keys: tuple[Key, ...]
    secondary: tuple[Key, ...]
    content: str
    comment: str
    constant: bool
    selective: bool
    logic: int
    order: int
    disabled: bool
    scan_depth: int | None
    probability: float = 100.0
    """The chance in percent that the entry is kept once it matched; 100 when `useProbability` is off."""
    groups: tuple[str, ...] = ()
    group_override: bool = False
    group_weight: float = DEFAULT_WEIGHT
    exclude_recursion: bool = False
    """Not activated by other entries' content (only by the chat)."""
    prevent_recursion: bool = False
    """Its content does not activate other entries."""
    delay_level: int = 0
    """`delayUntilRecursion`: 0 = off; n ≥ 1 = activated only by recursion, from delay level n on."""
    ignore_budget: bool = False
    sticky: int = 0
    """Timed effects, in messages (0: off): stays active, cannot activate again, cannot activate
    before the chat has this many messages (worldinfo_timed.py)."""
    cooldown: int = 0
    delay: int = 0

    ref: str = field(init=False, repr=False, compare=False)
    """`worldinfo:<book>#<uid>` (computed once: the activation looks it up per entry and pass)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ref", f"worldinfo:{self.book}#{self.uid}")


@dataclass(frozen=True, slots=True)
class Book:
    name: str
    entries: tuple[Entry, ...]


_REGEX_END: Final = re.compile(r"/[gimsuy]*\s*(?:,|\Z)")  # fixed and linear: `re` will do


def split_keys(value: str) -> list[str]:
    """A comma-separated key string → its keys, stripped, empty ones dropped. A key that starts with
    `/` and closes with `/flags` before a comma or the end is a regular expression and is kept whole,
    commas and all (`/a{1,3}/i, dragon` is two keys), as SillyTavern keeps it."""
    keys: list[str] = []
    at = 0
    while at <= len(value):
        comma = value.find(",", at)
        token_end = len(value) if comma < 0 else comma
        start = at + len(value[at:token_end]) - len(value[at:token_end].lstrip())
        if value.startswith("/", start):
            end = _regex_end(value, start)
            if end is not None:
                keys.append(value[start:end].strip())
                at = end + 1
                continue
        piece = value[at:token_end].strip()
        if piece:
            keys.append(piece)
        at = token_end + 1
    return keys


def _regex_end(value: str, start: int) -> int | None:
    """Where the `/pattern/flags` key at `start` ends (the index of its comma, or the length), or None
    when no unescaped `/` closes it before a comma or the end."""
    at = start + 1
    while True:
        slash = value.find("/", at)
        if slash < 0:
            return None
        backslashes = len(value[at:slash]) - len(value[at:slash].rstrip("\\"))
        if slash > start + 1 and backslashes % 2 == 0:
            closed = _REGEX_END.match(value, slash)
            if closed is not None:
                return closed.end() - 1 if value[closed.end() - 1:closed.end()] == "," else closed.end()
        at = slash + 1


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return split_keys(value)
    if isinstance(value, list) and all(isinstance(k, str) for k in value):
        return [k for k in value if k.strip()]
    raise TooldeckError(WI_BOOK_INVALID, f"{where} must be a list of strings")


def _int(value: Any, default: int | None, where: str) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value != int(value):
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be an integer, not {value!r}")
    return int(value)


def _number(value: Any, default: float, low: float, high: float, where: str) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be a number from {low:g} to {high:g}, not {value!r}")
    return float(value)


def _bool(raw: dict[str, Any], name: str, default: bool, where: str) -> bool:
    value = raw.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.{name} must be true, false or null, not {value!r}")
    return value


def _delay_level(value: Any, where: str) -> int:
    """`delayUntilRecursion`: a boolean (true = level 1) or a level number (0 = off)."""
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    level = _int(value, 0, where)
    if level is None or not 0 <= level <= MAX_DELAY_LEVEL:
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be true, false or a level from 0 to {MAX_DELAY_LEVEL}, "
                                             f"not {value!r}")
    return level


def _messages(value: Any, where: str) -> int:
    """A timed effect's length in messages: an integer from 0 (off) to MAX_MESSAGES; null is 0."""
    count = _int(value, 0, where) or 0
    if not 0 <= count <= MAX_MESSAGES:
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be a number of messages from 0 to {MAX_MESSAGES}, "
                                             f"not {value!r}")
    return count


def _groups(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, str):
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be a string of comma-separated group names, "
                                             f"not {value!r}")
    return tuple(dict.fromkeys(g.strip() for g in value.split(",") if g.strip()))


def parse_entry(book: str, key: str, position: int, raw: Any) -> Entry:
    where = f"world info {book!r} entry {key}"
    if not isinstance(raw, dict):
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be an object")
    case = _bool(raw, "caseSensitive", False, where)
    whole = _bool(raw, "matchWholeWords", False, where)
    keys = tuple(compile_key(k, case, whole, where) for k in _str_list(raw.get("key", raw.get("keys")), f"{where}.key"))
    secondary = tuple(compile_key(k, case, whole, where)
                      for k in _str_list(raw.get("keysecondary", raw.get("secondary_keys")), f"{where}.keysecondary"))
    content = raw.get("content", "")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.content must be a string")
    comment = raw.get("comment")
    if comment is not None and not isinstance(comment, str):
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.comment must be a string, not {comment!r}")
    logic = _int(raw.get("selectiveLogic"), AND_ANY, f"{where}.selectiveLogic")
    if logic not in LOGIC_NAMES:
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.selectiveLogic must be 0 (AND_ANY), 1 (NOT_ALL), 2 (NOT_ANY) "
                                             f"or 3 (AND_ALL), not {logic}")
    uid = raw.get("uid", key)
    if not isinstance(uid, str | int) or isinstance(uid, bool):
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.uid must be a number or a string, not {uid!r}")
    depth = _int(raw.get("scanDepth"), None, f"{where}.scanDepth")
    if depth is not None and depth < 0:
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.scanDepth must be 0 or more")
    probability = _number(raw.get("probability"), 100.0, 0, 100, f"{where}.probability")
    return Entry(
        book, str(uid), position, keys, secondary, content, comment or "",
        constant=_bool(raw, "constant", False, where), selective=_bool(raw, "selective", True, where),
        logic=logic or 0, order=_int(raw.get("order"), DEFAULT_ORDER, f"{where}.order") or 0,
        disabled=_bool(raw, "disable", False, where), scan_depth=depth,
        probability=probability if _bool(raw, "useProbability", True, where) else 100.0,
        groups=_groups(raw.get("group"), f"{where}.group"),
        group_override=_bool(raw, "groupOverride", False, where),
        group_weight=_number(raw.get("groupWeight"), DEFAULT_WEIGHT, 0, 1e9, f"{where}.groupWeight"),
        exclude_recursion=_bool(raw, "excludeRecursion", False, where),
        prevent_recursion=_bool(raw, "preventRecursion", False, where),
        delay_level=_delay_level(raw.get("delayUntilRecursion"), f"{where}.delayUntilRecursion"),
        ignore_budget=_bool(raw, "ignoreBudget", False, where),
        sticky=_messages(raw.get("sticky"), f"{where}.sticky"),
        cooldown=_messages(raw.get("cooldown"), f"{where}.cooldown"),
        delay=_messages(raw.get("delay"), f"{where}.delay"),
    )


def parse_book(name: str, data: Any) -> Book:
    entries = data.get("entries") if isinstance(data, dict) else None
    if isinstance(entries, dict):
        items = list(entries.items())
    elif isinstance(entries, list):
        items = [(str(i), e) for i, e in enumerate(entries)]
    else:
        raise TooldeckError(WI_BOOK_INVALID, f"world info {name!r} has no `entries` object or list")
    parsed = tuple(parse_entry(name, k, i, e) for i, (k, e) in enumerate(items))
    refs = [e.uid for e in parsed]
    if len(set(refs)) != len(refs):
        raise TooldeckError(WI_BOOK_INVALID, f"world info {name!r} has two entries with the same uid")
    return Book(name, parsed)


def load_book(spec: str, home: Path | None) -> Book:
    """A book by name (`<home>/worldinfo/<name>.json`) or by path."""
    path = Path(spec)
    if not (path.suffix == ".json" or path.is_absolute()) and home is not None:
        path = home / "worldinfo" / f"{spec}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TooldeckError(WI_BOOK_INVALID, f"cannot read world info {spec!r} ({path}): {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TooldeckError(WI_BOOK_INVALID, f"world info {spec!r} ({path}) is not JSON: {exc}") from None
    except RecursionError:
        raise TooldeckError(WI_BOOK_INVALID, f"world info {spec!r} ({path}) nests too deeply") from None
    return parse_book(path.stem, data)
