"""The platforms' formatting rules on generated messages: every Telegram part is within the limit, holds
only Telegram's tags, balanced, with its text escaped, and the parts together say what the message says;
every Discord part is within the limit with its code fences balanced, and the parts carry the message
whole. Plus the mappings of common HTML."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.builtins.chat_format import (
    discord_parts,
    discord_pieces,
    telegram_parts,
    telegram_tokens,
    units,
    visible_text,
)

ALLOWED = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre", "blockquote",
           "tg-spoiler", "span", "tg-emoji"}
_TAG = re.compile(r"<(/?)([a-z-]+)((?:\s[^<>]*)?)>")
_FENCE = re.compile(r"^\s*```", re.MULTILINE)

pieces = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(["<b>", "</b>", "<i>", "</i>", "<a href='https://x.y/?a=1&b=2'>", "<a href=\"javascript:1\">",
                     "</a>", "<pre>", "<code class='language-py'>", "</code>", "</pre>", "<blockquote expandable>",
                     "</blockquote>", "<span class='tg-spoiler'>", "</span>", "<p>", "</p>", "<br>", "<h1>", "</h1>",
                     "<ul><li>", "</li>", "<div>", "</div>", "<script>", "</script>", "<unknown x=1>", "</unknown>",
                     "&amp;", "&lt;", "<", ">", "&", "\n", " ", "😀", "word "]),
)


def _check_telegram(part: str) -> str:
    """The part's visible text; asserts it is Telegram HTML: known tags, balanced, text escaped."""
    stack: list[str] = []
    text: list[str] = []
    pos = 0
    for m in _TAG.finditer(part):
        raw = part[pos:m.start()]
        assert "<" not in raw and ">" not in raw, part
        assert not re.search(r"&(?!amp;|lt;|gt;|quot;|#x27;)", raw), part
        text.append(html.unescape(raw))
        closing, name = m.group(1), m.group(2)
        assert name in ALLOWED, part
        if closing:
            assert stack and stack[-1] == name, part
            stack.pop()
        else:
            stack.append(name)
        pos = m.end()
    tail = part[pos:]
    assert "<" not in tail and ">" not in tail
    text.append(html.unescape(tail))
    assert stack == [], part
    return "".join(text)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(message=st.lists(pieces, max_size=80).map("".join), limit=st.sampled_from([120, 300, 4096]))
def test_telegram_parts_are_valid_within_the_limit_and_complete(message: str, limit: int) -> None:
    parts = telegram_parts(message, limit)
    assert all(units(p) <= limit for p in parts), parts
    shown = "".join(_check_telegram(p) for p in parts)
    assert shown == visible_text(telegram_tokens(message, limit))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(lines=st.lists(st.one_of(st.text(max_size=120), st.text(min_size=90, max_size=300),
                                st.sampled_from(["```", "```python", "~~~", "``` js", ""])), max_size=60),
       limit=st.sampled_from([80, 500, 2000]))
def test_discord_parts_keep_the_message_and_balance_fences(lines: list[str], limit: int) -> None:
    message = "\n".join(lines)
    split = discord_pieces(message, limit)
    assert "".join(body for _, body, _ in split) == message and all(body for _, body, _ in split)
    for part in discord_parts(message, limit):
        assert len(part) <= limit, part
        assert len(_FENCE.findall(part)) % 2 == 0, part


def test_common_html_is_mapped() -> None:
    [part] = telegram_parts("<h3>T</h3><ol><li>a</li><li>b</li></ol><p>x<br/>y</p><hr><a href='ftp://x'>f</a>")
    assert part == "<b>T</b>\n• a\n• b\n\nx\ny\n\n\n———\nf"
    assert telegram_parts("") == [] and discord_parts("") == []
