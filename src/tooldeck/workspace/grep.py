"""The search tool's regular expressions: RE2, matched line by line, in time linear in the text.

RE2 (`google-re2`) never backtracks, so no pattern can take exponential time (`^(a+)+$` over a line
of `a`s and a `!` took 28 s in Python's `re`, holding the interpreter lock throughout), and it
releases the interpreter lock while it matches. Its syntax is Python's `re` without the constructs
that need backtracking; `compile_pattern` says what to write instead when it meets one.

Matching runs on the file's bytes. When the pattern cannot tell a line from a whole file, one
search of the file (multi-line mode, `never_nl`: no match may span a newline) finds the next
matching line directly; patterns that can (`\\A`, `\\z`, `\\C`, turning multi-line mode off) are
matched line by line. Either way the work is cut into pieces of about `CHUNK_BYTES` (or
`LINES_PER_CHECK` lines), and `Stop.check` runs between them, so a deadline or a cancellation stops
a search of even one large file within milliseconds.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import re2

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.errors import GREP_PATTERN_INVALID
from tooldeck.workspace.names import visible

CHUNK_BYTES: Final = 256 * 1024
LINES_PER_CHECK: Final = 2048
_NEWLINE: Final = 0x0A
# Constructs whose meaning differs between a line and a whole file (or that can match a newline even
# under never_nl): patterns holding them are matched line by line.
_LINE_ONLY = re.compile(r"\\[AzC]|\(\?[A-Za-z]*-[A-Za-z]*m")
_UNANCHORED = re2._Anchor.UNANCHORED


def _options(never_nl: bool) -> Any:
    options = re2.Options()
    options.never_capture = True  # only where a match starts is needed: RE2 can stay in its DFA
    options.log_errors = False
    options.never_nl = never_nl
    return options


@dataclass(frozen=True, slots=True)
class Pattern:
    source: str
    line: Any
    """The pattern on one line (bytes in, no newline in them)."""
    whole: Any | None
    """The pattern on a whole file, finding matching lines; None when it must go line by line."""


def compile_pattern(source: str) -> Pattern:
    """Compile the model's pattern, or raise `workspace.grep_pattern_invalid` saying why and what to write."""
    try:
        encoded = source.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _invalid(source, f"it holds U+{ord(source[exc.start]):04X}, a lone surrogate that is not text",
                       "Remove it.") from None
    try:
        line = re2.compile(encoded, _options(False))
        whole = None if _LINE_ONLY.search(source) else re2.compile(b"(?m)" + encoded, _options(True))
    except re2.error as exc:
        raise _invalid(source, *_explain(source, _message(exc))) from None
    return Pattern(source, line, whole)


def _message(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else ""
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


_HINTS: Final = (
    (("(?=", "(?!", "(?<=", "(?<!"), "look-ahead and look-behind are not supported",
     "Match the surrounding text itself (`foo(?=bar)` → `foobar`); for \"not followed by\", search the wider "
     "pattern and read the lines it finds."),
    (("(?P=", "\\k", "\\g", "\\1", "\\2", "\\3", "\\4", "\\5", "\\6", "\\7", "\\8", "\\9"),
     "backreferences are not supported (the engine matches in linear time and cannot refer back to a group)",
     "Spell the repeated text out, or search for one part and read the lines found."),
    (("(?>",), "atomic groups are not supported", "Drop the `(?>` … `)`: this engine never backtracks."),
    (("*+", "++", "?+", "}+"), "possessive quantifiers are not supported",
     "Drop the extra `+` (`a*+` → `a*`): this engine never backtracks."),
    (("\\Z",), "`\\Z` is not supported", "Write `$` (end of the line) instead."),
    (("(?#",), "comments `(?#…)` are not supported", "Remove them."),
    (("(?(",), "conditionals `(?(…)…|…)` are not supported", "Use an alternation `(a|b)` instead."),
)


def _explain(source: str, message: str) -> tuple[str, str]:
    for tokens, why, fix in _HINTS:
        if any(tok in message or tok in source for tok in tokens):
            return f"{why}; RE2 says: {message}", fix
    if "(?" in message and "x" in message.split("(?", 1)[1][:8]:
        return "verbose mode `(?x)` is not supported", "Remove the `x` flag and the spaces and comments."
    if "repetition size" in message:
        return f"a repeat count can be at most 1000 ({message})", "Use a smaller count, e.g. `a{2,1000}`."
    if "too large" in message:
        return "the pattern is too large for the engine", "Make it simpler: fewer or smaller repeats."
    return message, ("Use RE2 syntax (Python `re` without backreferences and look-around), e.g. `foo.*bar` or "
                     "`(?i)todo`; escape literal characters such as `\\(`.")


def _invalid(source: str, why: str, fix: str) -> ToolCallError:
    shown = visible(source if len(source) <= 200 else source[:200] + "…")
    return ToolCallError(GREP_PATTERN_INVALID, f"`{shown}` cannot be used as a search pattern: {why}. {fix}")


class Stopped(Exception):
    """The search was stopped: `reason` is `time` (its deadline passed) or `cancelled`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Stop:
    """A search's deadline and cancel flag, checked between files and between pieces of a file."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    def check(self) -> None:
        if self._cancelled.is_set():
            raise Stopped("cancelled")
        if time.monotonic() > self.deadline:
            raise Stopped("time")


def _find(rx: Any, data: bytes, pos: int, end: int) -> int:
    """Where the first match in `data[pos:end]` starts (with the whole of `data` as context), or -1.
    Calls RE2 directly: the wrapper's generator costs more than the match on a small file."""
    return rx._regexp.Match(_UNANCHORED, data, pos, end)[0][0]


def matching_lines(pattern: Pattern, data: bytes, stop: Stop) -> Iterator[tuple[int, int, int]]:
    """(line number, start, end) of every line of `data` that matches, in order. Lines are what
    `read_file` numbers: split on `\\n`, with no empty line after a final newline."""
    if pattern.whole is None:
        yield from _line_by_line(pattern.line, data, stop)
        return
    rx, n = pattern.whole, len(data)
    phantom = n == 0 or data[-1] == _NEWLINE  # a match at `n` would be on a line that does not exist
    pos = newlines = counted = 0
    while True:
        stop.check()
        cut = data.find(b"\n", pos + CHUNK_BYTES) if pos + CHUNK_BYTES < n else -1
        end = n if cut < 0 else cut
        while pos <= end:
            at = _find(rx, data, pos, end)
            if at < 0 or (at == n and phantom):
                break
            start = data.rfind(b"\n", 0, at) + 1
            stop_at = data.find(b"\n", at)
            stop_at = n if stop_at < 0 else stop_at
            newlines += data.count(b"\n", counted, start)
            counted = start
            yield newlines + 1, start, stop_at
            pos = stop_at + 1
            stop.check()
        if end >= n:
            return
        pos = max(pos, end + 1)


def _line_by_line(rx: Any, data: bytes, stop: Stop) -> Iterator[tuple[int, int, int]]:
    n = len(data)
    pos = line_no = 0
    while pos < n:
        end = data.find(b"\n", pos)
        end = n if end < 0 else end
        line_no += 1
        if line_no % LINES_PER_CHECK == 0:
            stop.check()
        line = data[pos:end]
        if _find(rx, line, 0, len(line)) >= 0:
            yield line_no, pos, end
        pos = end + 1


def first_match(pattern: Pattern, line: str) -> int:
    """Where the first match in `line` starts, in characters (0 when none)."""
    data = line.encode("utf-8")
    at = _find(pattern.line, data, 0, len(data))
    return len(data[:at].decode("utf-8", "ignore")) if at > 0 else 0
