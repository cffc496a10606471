"""World info (lore): books of entries, and which entries the recent messages activate.

A book is a SillyTavern world-info JSON file: `{"entries": {"<uid>": entry, …}}` (or a list). An
entry: `key` (primary keys), `keysecondary`, `content`, `comment` (its title), `constant`,
`selective`, `selectiveLogic`, `order` (default 100), `disable`, `scanDepth`, `caseSensitive`,
`matchWholeWords`. A key written `/pattern/flags` is a regular expression (RE2: linear time; flag `i`).

Activation (`activate`), over the newest `scan_depth` messages of the run's frozen input (an entry's
own `scanDepth` wins; 0 scans nothing):
1. A disabled entry never activates; a constant one always does.
2. Otherwise one primary key must occur (case-insensitive unless `caseSensitive`; with
   `matchWholeWords` a key of one word must stand alone).
3. Then, when `selective` and the entry has secondary keys, `selectiveLogic` decides:
   0 AND_ANY (one secondary key occurs), 1 NOT_ALL (not every secondary key occurs),
   2 NOT_ANY (no secondary key occurs), 3 AND_ALL (every secondary key occurs).
4. The active entries are ordered by `order` (ascending: the order SillyTavern inserts them), then by
   book, then by their place in the book.
Recursive scanning (entries activating entries) and token budgets are not implemented.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import re2

from tooldeck.conversation.model import WI_BOOK_INVALID, Message
from tooldeck.core.errors import TooldeckError

AND_ANY, NOT_ALL, NOT_ANY, AND_ALL = 0, 1, 2, 3
LOGIC_NAMES: Final = {AND_ANY: "AND_ANY", NOT_ALL: "NOT_ALL", NOT_ANY: "NOT_ANY", AND_ALL: "AND_ALL"}
DEFAULT_ORDER: Final = 100


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

    def found_in(self, text: str, lowered: str) -> bool:
        if self.regex is not None:
            return self.regex.search(text) is not None
        return (self.text in text) if self.case_sensitive else (self.text in lowered)


def compile_key(raw: str, case_sensitive: bool, whole_words: bool, where: str) -> Key:
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

    @property
    def ref(self) -> str:
        return f"worldinfo:{self.book}#{self.uid}"


@dataclass(frozen=True, slots=True)
class Book:
    name: str
    entries: tuple[Entry, ...]


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [k.strip() for k in value.split(",") if k.strip()]
    if isinstance(value, list) and all(isinstance(k, str) for k in value):
        return [k for k in value if k.strip()]
    raise TooldeckError(WI_BOOK_INVALID, f"{where} must be a list of strings")


def _int(value: Any, default: int | None, where: str) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be an integer, not {value!r}")
    return int(value)


def parse_entry(book: str, key: str, position: int, raw: Any) -> Entry:
    where = f"world info {book!r} entry {key}"
    if not isinstance(raw, dict):
        raise TooldeckError(WI_BOOK_INVALID, f"{where} must be an object")
    case = raw.get("caseSensitive") is True
    whole = raw.get("matchWholeWords") is True
    keys = tuple(compile_key(k, case, whole, where) for k in _str_list(raw.get("key", raw.get("keys")), f"{where}.key"))
    secondary = tuple(compile_key(k, case, whole, where)
                      for k in _str_list(raw.get("keysecondary", raw.get("secondary_keys")), f"{where}.keysecondary"))
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.content must be a string")
    logic = _int(raw.get("selectiveLogic"), AND_ANY, f"{where}.selectiveLogic")
    if logic not in LOGIC_NAMES:
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.selectiveLogic must be 0 (AND_ANY), 1 (NOT_ALL), 2 (NOT_ANY) "
                                             f"or 3 (AND_ALL), not {logic}")
    uid = raw.get("uid", key)
    depth = _int(raw.get("scanDepth"), None, f"{where}.scanDepth")
    if depth is not None and depth < 0:
        raise TooldeckError(WI_BOOK_INVALID, f"{where}.scanDepth must be 0 or more")
    return Entry(book, str(uid), position, keys, secondary, content, str(raw.get("comment") or ""),
                 raw.get("constant") is True, raw.get("selective", True) is not False, logic or 0,
                 _int(raw.get("order"), DEFAULT_ORDER, f"{where}.order") or 0, raw.get("disable") is True, depth)


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
    return parse_book(path.stem, data)


@dataclass(frozen=True, slots=True)
class Activated:
    ref: str
    book: str
    uid: str
    comment: str
    order: int
    reason: str
    content: str

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "book": self.book, "uid": self.uid, "comment": self.comment, "order": self.order,
                "reason": self.reason, "content": self.content}


def _window(messages: Sequence[Message], depth: int) -> tuple[str, str]:
    text = "\n".join(m.text for m in messages[max(0, len(messages) - depth):]) if depth > 0 else ""
    return text, text.lower()


def _reason(entry: Entry, text: str, lowered: str) -> str | None:
    if entry.constant:
        return "constant"
    primary = next((k for k in entry.keys if k.found_in(text, lowered)), None)
    if primary is None:
        return None
    if not entry.selective or not entry.secondary:
        return f"key {primary.text!r}"
    found = [k.found_in(text, lowered) for k in entry.secondary]
    ok = {AND_ANY: any(found), NOT_ALL: not all(found), NOT_ANY: not any(found), AND_ALL: all(found)}[entry.logic]
    return f"key {primary.text!r}, secondary {LOGIC_NAMES[entry.logic]}" if ok else None


def activate(books: Sequence[Book], messages: Sequence[Message], scan_depth: int) -> list[Activated]:
    windows: dict[int, tuple[str, str]] = {}
    active: list[tuple[int, int, int, Activated]] = []
    for b, book in enumerate(books):
        for entry in book.entries:
            if entry.disabled:
                continue
            depth = scan_depth if entry.scan_depth is None else entry.scan_depth
            if depth not in windows:
                windows[depth] = _window(messages, depth)
            reason = _reason(entry, *windows[depth])
            if reason is not None:
                active.append((entry.order, b, entry.position, Activated(entry.ref, book.name, entry.uid, entry.comment,
                                                                         entry.order, reason, entry.content)))
    active.sort(key=lambda a: a[:3])
    return [a[3] for a in active]
