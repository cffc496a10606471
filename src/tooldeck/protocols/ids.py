"""Call ids on replay: each provider's id rules, rewritten deterministically where an id breaks them.

The same history always gets the same ids (prompt caches stay warm), the rewritten ids are unique in
the history, and a call and its result always carry the same id.
"""

from __future__ import annotations

import hashlib
import re
import string

from tooldeck.core.jsonvalue import is_unicode

_ALNUM = string.digits + string.ascii_letters
_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")
OPENAI_ID_MAX = 40


def id_problem(call_id: object, fmt: str, name: str | None = None) -> str | None:
    """Why `call_id` is not acceptable to `fmt`, or None."""
    if not isinstance(call_id, str) or not call_id:
        return "the call id must be a non-empty string"
    if not call_id.isascii() and not is_unicode(call_id):
        return "the call id must be valid Unicode text (it holds a lone surrogate, which JSON cannot carry)"
    if fmt == "mistral":
        return None if _MISTRAL_ID.fullmatch(call_id) else "Mistral call ids are exactly 9 characters of [A-Za-z0-9]"
    if fmt == "anthropic":
        return None if _ANTHROPIC_ID.fullmatch(call_id) else "Anthropic tool_use ids match ^[A-Za-z0-9_-]{1,64}$"
    if fmt in ("openai", "openai_responses"):
        return None if len(call_id) <= OPENAI_ID_MAX else f"OpenAI call ids are at most {OPENAI_ID_MAX} characters"
    if fmt == "gemini":
        if name is not None and call_id == name:
            return "a Gemini call id must not be the function name"
        return None if len(call_id) <= 64 else "Gemini call ids are at most 64 characters here"
    return None


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _derive(original: str, fmt: str, salt: int) -> str:
    digest = _digest(f"{original}\x00{salt}")
    if fmt == "mistral":
        n = int.from_bytes(digest[:8], "big")
        out = []
        for _ in range(9):
            n, r = divmod(n, 62)
            out.append(_ALNUM[r])
        return "".join(out)
    return "call_" + digest.hex()[:24]


class IdMap:
    """Assigns each (round, index) call a valid, unique id for one rendering of a history."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self._used: set[str] = set()

    def assign(self, original: str, name: str | None = None) -> str:
        if id_problem(original, self.fmt, name) is None and original not in self._used:
            self._used.add(original)
            return original
        salt = 0
        while True:
            candidate = _derive(original, self.fmt, salt)
            if candidate not in self._used and id_problem(candidate, self.fmt, name) is None:
                self._used.add(candidate)
                return candidate
            salt += 1
