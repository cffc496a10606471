"""`WWW-Authenticate` header values → challenges (RFC 9110 §11.6.1), for naming an authorization demand.

```
WWW-Authenticate = #challenge
challenge        = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
auth-param       = token BWS "=" BWS ( token / quoted-string )
```

A header may carry several challenges, and commas separate both challenges and the parameters of
one challenge; a token followed by `=` and a value continues the current challenge, any other token
starts a new one. The parser is lenient (what a server sends is not ours to reject) and total: any
string gives a list, never an exception. Parameter names are lower-cased (they are
case-insensitive); a repeated parameter keeps its first value. Input past `MAX_HEADER_CHARS` is
ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_HEADER_CHARS = 16 * 1024
MAX_CHALLENGES = 16
_STOP = frozenset(' \t,="')  # a bare word (scheme, token, param name, token68 body) ends at one of these
_SPACE = " \t"


@dataclass(frozen=True, slots=True)
class Challenge:
    scheme: str
    """As sent; compare with `is_scheme` (schemes are case-insensitive)."""
    params: dict[str, str] = field(default_factory=dict)
    token68: str | None = None

    def is_scheme(self, name: str) -> bool:
        return self.scheme.lower() == name.lower()


def parse(value: str) -> list[Challenge]:
    """Every challenge in one `WWW-Authenticate` value (or several values joined with `, `)."""
    return _Parser(value[:MAX_HEADER_CHARS]).challenges()


def bearer(value: str) -> Challenge | None:
    """The first `Bearer` challenge of a header value, if any."""
    return next((c for c in parse(value) if c.is_scheme("bearer")), None)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def challenges(self) -> list[Challenge]:
        out: list[Challenge] = []
        while len(out) < MAX_CHALLENGES:
            self._skip(_SPACE + ",")
            start = self.i
            scheme = self._word()
            if not scheme:
                if self.i >= len(self.text):
                    break
                self.i = start + 1  # a stray `=` or `"`: skip one character and look again
                continue
            params: dict[str, str] = {}
            token68 = self._challenge_body(params)
            out.append(Challenge(scheme, params, token68))
        return out

    def _challenge_body(self, params: dict[str, str]) -> str | None:
        """After the scheme: a token68, or auth-params up to the next challenge (or the end)."""
        self._skip(_SPACE)
        first = True
        while self.i < len(self.text):
            mark = self.i
            name = self._word()
            if not name:
                if self._peek() == ",":  # a token68 follows its scheme after a space, never after a comma
                    self.i += 1
                    self._skip(_SPACE)
                    first = False
                    continue
                if self._peek() == '"':  # a quoted string where a name should be: skip it
                    self._quoted()
                    continue
                if self._peek() == "=":  # `=` without a name
                    self.i += 1
                    continue
                return None
            after_name = self.i
            self._skip(_SPACE)
            if self._peek() != "=":
                # A bare word: the next challenge's scheme (rewind), unless it is this challenge's token68.
                if first and self._at_end_of_item():
                    return name
                self.i = mark
                return None
            equals = self.i
            while self._peek() == "=":
                self.i += 1
            pads = self.i - equals
            self._skip(_SPACE)
            if first and (self._at_end_of_item()) and after_name == equals:
                return name + "=" * pads  # token68 with `=` padding, e.g. `Basic dXNlcg==`
            value = self._quoted() if self._peek() == '"' else self._word()
            params.setdefault(name.lower(), value)
            first = False
            self._skip(_SPACE)
            if self._peek() == ",":
                self.i += 1
                self._skip(_SPACE)
            elif self.i < len(self.text) and self._peek() not in _STOP:
                continue  # `a=b c=d`: missing comma; keep reading parameters
        return None

    def _at_end_of_item(self) -> bool:
        return self.i >= len(self.text) or self._peek() == ","

    def _peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def _skip(self, chars: str) -> None:
        while self.i < len(self.text) and self.text[self.i] in chars:
            self.i += 1

    def _word(self) -> str:
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in _STOP:
            self.i += 1
        return self.text[start:self.i]

    def _quoted(self) -> str:
        """A quoted-string starting at `"`; `\\x` is `x`; an unterminated one runs to the end."""
        self.i += 1
        out: list[str] = []
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch == "\\" and self.i + 1 < len(self.text):
                out.append(self.text[self.i + 1])
                self.i += 2
                continue
            self.i += 1
            if ch == '"':
                break
            out.append(ch)
        return "".join(out)
