"""Secret redaction: known secret values and well-known credential formats out of a tool's result.

A `Redactor` is built once from the values tooldeck knows (`policy/known_secrets.py`: `${VAR}` and
`${secret:NAME}` of the configs, model API keys, OAuth tokens, stored secrets), optionally the
credential formats of `FORMATS` and the Profile's own RE2 patterns, and then applied to every result
by projection, before the model, the records or a spill file see it. Each secret becomes a marker
naming what it was: `[redacted: GITHUB_TOKEN]` (a known value: its variable or secret name) or
`[redacted: github token]` (a format).

Invariants (tests/policy/test_redaction_property.py):
- the text that comes out holds no known value, even where values overlap or a marker next to the
  text around it would spell one (then the whole text becomes one marker);
- a text that holds no known value and matches no format or pattern comes out unchanged (the same
  object), so a clean result costs one scan and nothing else.

Only values of at least `MIN_CHARS` characters are known: shorter ones (`true`, a port number)
would blank out ordinary text. Detection is one `in` scan per value (CPython's string search,
several GB/s) up to `MANY_VALUES` values, one RE2 alternation beyond; formats and patterns are one
RE2 search (linear time, so no pattern can hold the interpreter). Replacement runs only on a hit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tooldeck.core.results import Redaction, ToolOutput

MIN_CHARS = 8
"""Shorter values are never redacted: they would match ordinary text."""
MANY_VALUES = 16
"""Above this many values, one RE2 alternation finds them faster than one `in` scan each."""
MAX_PASSES = 3
"""Rounds of redaction over a text whose markers and surroundings spelled a known value again."""
FALLBACK = "[redacted]"

_TOKEN = r"[A-Za-z0-9_\-]"
FORMATS: tuple[tuple[str, str], ...] = (
    ("private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*"
                    r"PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)"),
    ("aws access key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("slack token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("anthropic key", r"\bsk-ant-" + _TOKEN + "{20,}"),
    ("openai key", r"\bsk-(?:proj-|svcacct-|admin-)?" + _TOKEN + "{20,}"),
    ("stripe key", r"\b[rs]k_live_[A-Za-z0-9]{20,}"),
    ("google api key", r"\bAIza" + _TOKEN + "{35}"),
    ("jwt", r"\beyJ" + _TOKEN + r"{8,}\.eyJ" + _TOKEN + r"{8,}\.[A-Za-z0-9_\-]*"),
    # the credential of an Authorization header (the scheme stays), and a bare bearer token
    ("authorization header", r"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|bot)\s+"
                             r"([A-Za-z0-9._~+/\-]+=*)"),
    ("bearer token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/\-]{20,}=*)"),
)
"""The well-known credential formats (label, RE2 pattern; group 1, where there is one, is the secret).
docs/configuration.md "Secret redaction" lists them."""


@dataclass(frozen=True, slots=True)
class _Rule:
    label: str
    regex: Any  # a compiled RE2 pattern
    group: int


def _re2() -> Any:
    import re2  # google-re2: linear time; only redactors with formats, patterns or many values load it

    return re2


def compile_pattern(pattern: str) -> Any:
    """An RE2 pattern of the Profile's `redact_patterns`; ValueError says why one does not compile."""
    re2 = _re2()
    options = re2.Options()
    options.log_errors = False  # the error is ours to report, not RE2's to print on stderr
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"redact pattern {pattern!r} is not a valid RE2 pattern ({why}); RE2 has no "
                         "backreferences or lookaround") from None


class Redactor:
    """Compiled once per set of known values × Profile settings; `text`, `value` and `output` apply it."""

    __slots__ = ("_any", "_json_forms", "_labels", "_many", "_rules", "_values")

    def __init__(self, known: Iterable[tuple[str, str]], formats: bool = False, patterns: Sequence[str] = ()) -> None:
        labels: dict[str, str] = {}
        for label, value in known:
            if len(value) >= MIN_CHARS and value not in labels:
                labels[value] = label
        self._labels = labels
        self._values = tuple(sorted(labels, key=len, reverse=True))
        self._json_forms = tuple({orjson.dumps(v).decode()[1:-1] for v in self._values} - set(self._values))
        self._many = None
        if len(self._values) > MANY_VALUES:
            re2 = _re2()
            self._many = re2.compile("|".join(re2.escape(v) for v in self._values))
        rules: list[_Rule] = []
        if formats:
            re2 = _re2()
            for label, pattern in FORMATS:
                regex = re2.compile(pattern)
                rules.append(_Rule(label, regex, 1 if regex.groups else 0))
        for i, pattern in enumerate(patterns, 1):
            regex = compile_pattern(pattern)
            rules.append(_Rule(f"pattern {i}", regex, 1 if regex.groups else 0))
        self._rules = tuple(rules)
        self._any = _re2().compile("|".join(f"(?:{r.regex.pattern})" for r in rules)) if rules else None

    def __bool__(self) -> bool:
        return bool(self._values) or self._any is not None

    # -- detection ------------------------------------------------------------------------------
    def _has_value(self, text: str) -> bool:
        if self._many is not None:
            return self._many.search(text) is not None
        for v in self._values:  # noqa: SIM110 - a loop: `any()` over a generator costs a frame per value
            if v in text:
                return True
        return False

    def _hit(self, text: str) -> bool:
        return self._has_value(text) or (self._any is not None and self._any.search(text) is not None)

    # -- text -----------------------------------------------------------------------------------
    def text(self, text: str, counts: dict[str, int] | None = None) -> str:
        """`text` with every secret replaced by its marker (the same object when it holds none); each
        marker's labels are counted in `counts`."""
        if not self._hit(text):
            return text
        counts = {} if counts is None else counts
        out = self._replace(text, counts, rules=True)
        for _ in range(MAX_PASSES):
            if not self._has_value(out):
                return out
            out = self._replace(out, counts, rules=False)  # a marker and its surroundings spelled a value
        if not self._has_value(out):
            return out
        return FALLBACK if not any(v in FALLBACK for v in self._values) else "*"

    def _replace(self, text: str, counts: dict[str, int], rules: bool) -> str:
        spans: list[tuple[int, int, str]] = []
        for v in self._values:
            i = text.find(v)
            while i >= 0:  # every occurrence, overlapping ones too
                spans.append((i, i + len(v), self._labels[v]))
                i = text.find(v, i + 1)
        if rules:
            taken: list[tuple[int, int]] = []
            for rule in self._rules:  # in order: a match inside an earlier rule's is that rule's (sk-ant-…)
                for m in rule.regex.finditer(text):
                    start, end = m.span(rule.group)
                    if end > start and not any(s <= start and end <= e for s, e in taken):
                        taken.append((start, end))
                        spans.append((start, end, rule.label))
        if not spans:
            return text
        spans.sort()
        parts: list[str] = []
        pos = 0
        i, n = 0, len(spans)
        while i < n:  # merge overlapping spans into one marker naming each label once
            start, end, label = spans[i]
            names = [label]
            i += 1
            while i < n and spans[i][0] < end:
                end = max(end, spans[i][1])
                if spans[i][2] not in names:
                    names.append(spans[i][2])
                i += 1
            parts.append(text[pos:start])
            parts.append(f"[redacted: {', '.join(names)}]")
            for name in names:
                counts[name] = counts.get(name, 0) + 1
            pos = end
        parts.append(text[pos:])
        return "".join(parts)

    # -- JSON values ------------------------------------------------------------------------------
    def value(self, value: Any, counts: dict[str, int]) -> Any:
        """A JSON value (a result's structured data, a source's raw result) with every string redacted;
        the same object when nothing in it is a secret (checked on its JSON text first)."""
        if value is None or type(value) in (int, float, bool):
            return value
        if type(value) is str:
            return self.text(value, counts)
        try:
            dumped = orjson.dumps(value, default=_plain, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            dumped = None
        if dumped is not None and not self._hit(dumped) and not any(f in dumped for f in self._json_forms):
            return value
        return self._walk(value, counts)

    def _walk(self, value: Any, counts: dict[str, int]) -> Any:
        if isinstance(value, str):
            return self.text(value, counts)
        if isinstance(value, dict):
            return {(self.text(k, counts) if isinstance(k, str) else k): self._walk(v, counts)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._walk(v, counts) for v in value]
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return self._walk(dump(mode="json"), counts)
        return value

    def output(self, output: ToolOutput) -> tuple[ToolOutput, Redaction | None]:
        """`output` with its content, structured value and raw result redacted, and what was redacted
        (None, and the same output, when nothing was). A label's count is the most markers it got in any one
        of the three: they are forms of one result."""
        counts: dict[str, int] = {}
        content = self.text(output.content, counts)
        faces = [counts]
        structured = self.value(output.structured, _face(faces))
        raw = output.raw
        if raw is output.content:
            raw = content
        elif raw is not None:
            raw = self.value(raw, _face(faces))
        if not any(faces):
            return output, None
        for face in faces[1:]:  # the same secret in the text and the structured value is one secret
            for label, n in face.items():
                counts[label] = max(counts.get(label, 0), n)
        return (ToolOutput(content, structured, output.is_error, output.error_code, output.resource_refs,
                           output.effects, raw, output.may_have_executed, output.redacted),
                Redaction(counts, raw))


def _face(faces: list[dict[str, int]]) -> dict[str, int]:
    faces.append({})
    return faces[-1]


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, bytes | bytearray):
        return {"bytes": len(value)}
    raise TypeError
