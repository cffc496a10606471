"""Formatting rules per chat platform, pure: what `send_to_chatbot` sends is what the platform renders.

Telegram (`parse_mode=HTML`): only its tags survive — b strong i em u ins s strike del, `a href`
(http, https, tg, mailto), code (`class="language-x"` inside pre), pre, blockquote (`expandable`),
`span class="tg-spoiler"`, tg-spoiler, `tg-emoji emoji-id`; text is escaped (`& < >`). Common HTML is
mapped (br → newline, p → blank line, h1-h6 → bold line, li → "• " line); script/style/head vanish;
other tags are dropped and their text kept. Tags are balanced; nothing nests inside code/pre, a link
not in a link, a quote not in a quote. A message is cut into parts of at most 4,096 UTF-16 units (how
Telegram counts), at a line break, else a space, with the open tags closed at the end of a part and
opened again at the start of the next.

Discord (markdown): sent as written, in parts of at most 2,000 characters cut at line breaks (a longer
line at a space, else anywhere); a cut inside a ``` code block closes it and opens it again, with its
language, in the next part. Mentions never ping (`allowed_mentions`, in the request).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Final

TELEGRAM_LIMIT: Final = 4096
DISCORD_LIMIT: Final = 2000
_SIMPLE: Final = frozenset({"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "pre", "tg-spoiler"})
_HEADINGS: Final = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_DROP_CONTENT: Final = frozenset({"script", "style", "head", "title", "template"})
_LINK_SCHEMES: Final = ("http://", "https://", "tg://", "mailto:")
_VOID: Final = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "source"})
_FENCE: Final = re.compile(r"^\s*```")


def units(text: str) -> int:
    """Length in UTF-16 code units (a character beyond U+FFFF counts 2), as Telegram counts."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


@dataclass(frozen=True, slots=True)
class Tag:
    name: str
    start: str

    @property
    def end(self) -> str:
        return f"</{self.name}>"


Token = Tag | str | None
"""A start tag, a run of text (unescaped), or None: the end of the innermost open tag."""


class _Sanitizer(HTMLParser):
    def __init__(self, budget: int) -> None:
        super().__init__(convert_charrefs=True)
        self.budget = budget
        self.tokens: list[Token] = []
        self.stack: list[tuple[str, Tag | None]] = []  # (source tag, what was kept of it: None = dropped)
        self.skip = 0

    def _kept(self) -> list[Tag]:
        return [t for _, t in self.stack if t is not None]

    def _start(self, source: str, tag: Tag | None) -> None:
        kept = self._kept()
        names = [t.name for t in kept]
        if tag is not None:
            code_in_pre = tag.name == "code" and names[-1:] == ["pre"] and self.stack[-1][1] is not None
            nested_badly = (("pre" in names or "code" in names) and not code_in_pre) or (
                tag.name in names and tag.name in ("a", "blockquote"))
            budget = sum(units(t.start) + len(t.end) for t in kept) + units(tag.start) + len(tag.end)
            if nested_badly or budget > self.budget:
                tag = None
        self.stack.append((source, tag))
        if tag is not None:
            self.tokens.append(tag)

    def _text(self, text: str) -> None:
        if text and not self.skip:
            self.tokens.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in _DROP_CONTENT:
            self.skip += 1
            return
        if tag in _VOID:
            self.handle_startendtag(tag, attrs)
            return
        if tag == "li":
            self._text("• ")
        kept: Tag | None = None
        if tag in _SIMPLE:
            kept = Tag(tag, f"<{tag}>")
        elif tag in _HEADINGS:
            kept = Tag("b", "<b>")
        elif tag == "a" and a.get("href", "").strip().lower().startswith(_LINK_SCHEMES):
            kept = Tag("a", f'<a href="{html.escape(a["href"].strip(), quote=True)}">')
        elif tag == "code":
            lang = a.get("class", "")
            ok = re.fullmatch(r"language-[A-Za-z0-9_+#.-]{1,32}", lang) and self.stack[-1:] and \
                self.stack[-1][1] is not None and self.stack[-1][1].name == "pre"
            kept = Tag("code", f'<code class="{lang}">' if ok else "<code>")
        elif tag == "blockquote":
            kept = Tag("blockquote", "<blockquote expandable>" if "expandable" in a else "<blockquote>")
        elif tag == "span" and a.get("class") == "tg-spoiler":
            kept = Tag("span", '<span class="tg-spoiler">')
        elif tag == "tg-emoji" and a.get("emoji-id", "").isdigit():
            kept = Tag("tg-emoji", f'<tg-emoji emoji-id="{a["emoji-id"]}">')
        self._start(tag, kept)  # a tag Telegram lacks is kept as dropped: its end is dropped too, its text kept

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self._text("\n")
        elif tag == "hr":
            self._text("\n———\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_CONTENT:
            self.skip = max(0, self.skip - 1)
            return
        if tag in _VOID:
            return
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                break
        else:
            return  # an end tag that closes nothing
        above = self.stack[i + 1:]
        for _, kept in reversed(self.stack[i:]):
            if kept is not None:
                self.tokens.append(None)
        del self.stack[i:]
        for source, kept in above:  # closed out of order: still open in the source, so opened again
            self._start(source, kept)
        if tag == "p":
            self._text("\n\n")
        elif tag in _HEADINGS or tag in ("div", "li", "ul", "ol", "tr"):
            self._text("\n")

    def handle_data(self, data: str) -> None:
        self._text(data)

    def close(self) -> None:
        super().close()
        for _, kept in reversed(self.stack):
            if kept is not None:
                self.tokens.append(None)
        self.stack = []


def telegram_tokens(message: str, limit: int = TELEGRAM_LIMIT) -> list[Token]:
    """The message as balanced Telegram tokens (see the module docstring); the tags open at any point take
    at most a quarter of `limit`, so every part has room for text."""
    parser = _Sanitizer(limit // 4)
    parser.feed(message)
    parser.close()
    return parser.tokens


def visible_text(tokens: list[Token]) -> str:
    return "".join(t for t in tokens if isinstance(t, str))


def _fit(text: str, room: int) -> int:
    """How many characters of `text` fit in `room` units once escaped."""
    used = 0
    for i, c in enumerate(text):
        used += units(html.escape(c, quote=False))
        if used > room:
            return i
    return len(text)


def telegram_parts(message: str, limit: int = TELEGRAM_LIMIT) -> list[str]:
    """The message as Telegram HTML parts of at most `limit` UTF-16 units each."""
    parts: list[str] = []
    open_tags: list[Tag] = []
    current: list[str] = []
    used = 0
    has_text = False

    def closing() -> int:
        return sum(len(t.end) for t in open_tags)

    def flush() -> None:
        nonlocal current, used, has_text
        if has_text:
            parts.append("".join(current) + "".join(t.end for t in reversed(open_tags)))
        current = [t.start for t in open_tags]
        used = sum(units(t.start) for t in open_tags)
        has_text = False

    for token in telegram_tokens(message, limit):
        if token is None:
            tag = open_tags.pop()
            current.append(tag.end)
            used += len(tag.end)
        elif isinstance(token, Tag):
            if used + units(token.start) + len(token.end) + closing() > limit:
                flush()
            open_tags.append(token)
            current.append(token.start)
            used += units(token.start)
        else:
            text = token
            while text:
                room = limit - used - closing()
                escaped = html.escape(text, quote=False)
                if units(escaped) <= room:
                    current.append(escaped)
                    used += units(escaped)
                    has_text = True
                    break
                n = _fit(text, room)
                cut = max(text.rfind("\n", 0, n), text.rfind(" ", 0, n)) + 1
                if cut <= 0:
                    if has_text:
                        flush()
                        continue
                    cut = max(n, 1)
                current.append(html.escape(text[:cut], quote=False))
                used += units(html.escape(text[:cut], quote=False))
                has_text = True
                text = text[cut:]
                flush()
    flush()
    return parts


def discord_pieces(message: str, limit: int = DISCORD_LIMIT) -> list[tuple[str, str, str]]:
    """The message as (added opening fence, the message's own text, added closing fence) per part; the own
    texts joined are the message."""
    pieces: list[tuple[str, str, str]] = []
    fence: str | None = None  # the open code block's opening line, e.g. "```python\n"
    prefix, body = "", ""

    def room(after_fence: str | None) -> int:
        return limit - len(prefix) - len(body) - (len("\n```") if after_fence is not None else 0)

    def flush(open_fence: str | None) -> None:
        nonlocal prefix, body
        if body:
            suffix = ("\n```" if not body.endswith("\n") else "```") if open_fence is not None else ""
            pieces.append((prefix, body, suffix))
        prefix, body = (open_fence if open_fence is not None else ""), ""

    for line in message.splitlines(keepends=True):
        after = fence
        if _FENCE.match(line):
            after = None if fence is not None else (line if line.endswith("\n") else line + "\n")
        while line:
            if len(line) <= room(after):
                body += line
                line = ""
                break
            if body:
                flush(fence)
                continue
            n = max(room(fence), 1)
            cut = line.rfind(" ", 0, n) + 1 or n
            body += line[:cut]
            line = line[cut:]
            flush(fence)
        fence = after
    flush(fence)
    return pieces


def discord_parts(message: str, limit: int = DISCORD_LIMIT) -> list[str]:
    return ["".join(p) for p in discord_pieces(message, limit)]
