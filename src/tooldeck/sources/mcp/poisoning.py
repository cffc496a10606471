"""Descriptions that carry instructions aimed at the model ("tool poisoning"): `scan(tool) -> [Finding]`.

A tool's description (and its title, and every `description` / `title` inside its schemas) is read by
the model, not by the user who approved the server. Flagged:

- `invisible_characters`: Unicode format characters (category Cf: zero-width spaces and joiners, bidi
  embeddings, overrides and isolates, the invisible "tag" characters that can spell ASCII text) and
  control characters other than tab and newline;
- `hidden_comment`: an HTML comment opener `<!--` (text a rendered view does not show);
- `hidden_whitespace`: a run of at least `WHITESPACE_RUN` whitespace characters (or `NEWLINE_RUN`
  line breaks) followed by more text, which pushes it out of a reviewer's view;
- `markup_tag`: `<IMPORTANT>`, `<system>`, `<instructions>`, `[INST]`, `<|im_start|>` and the like;
- `instruction`: phrases that address the model about its instructions or the user ("ignore previous
  instructions", "do not tell the user", "you are now", …);
- `sensitive_path`: credentials a description has no reason to mention (`~/.ssh`, `id_rsa`, `mcp.json`, …).

Phrases are matched on an NFKC-folded copy with format characters removed and whitespace collapsed, so
splitting a phrase with zero-width characters or full-width letters does not hide it. Every pass is
linear in the text (no backtracking regex over unbounded runs). A finding is a flag for the user, never
a reason to drop the tool by itself.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

WHITESPACE_RUN = 40
NEWLINE_RUN = 8
_SNIPPET = 60
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_TAG = re.compile(r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|critical|override|context)\b"
                  r"[^<>]{0,80}>|\[/?inst\]|<\|im_(?:start|end)\|>", re.IGNORECASE)
_PHRASES = re.compile(
    r"\b(?:ignore|disregard|forget|override) (?:all |any |the |your )*(?:previous|prior|above|earlier|preceding|"
    r"other|system) (?:instructions|prompts?|messages|rules|directions|context)"
    r"|\b(?:do not|don't|never) (?:tell|inform|mention|reveal|show|notify|alert)\b[^.]{0,40}\b(?:user|human)"
    r"|\bwithout (?:telling|informing|notifying|alerting|asking) the (?:user|human)"
    r"|\bthe (?:user|human) (?:must|should|will) not (?:know|see|be told)"
    r"|\byou are now\b|\bnew instructions\b|\bsystem prompt\b|\bbefore (?:using|calling) (?:any|this|other) tools?,? "
    r"(?:you )?must\b",
    re.IGNORECASE)
_PATHS = re.compile(r"~/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|\.aws/credentials|\bmcp\.json\b|\.cursor/|"
                    r"\.env\b|/etc/(?:passwd|shadow)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    where: str
    """`description`, `title`, or a JSON pointer into a schema (`/inputSchema/properties/x/description`)."""
    detail: str

    def text(self) -> str:
        return f"{self.kind} in {self.where}: {self.detail}"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail}


def scan(tool: dict[str, Any]) -> list[Finding]:
    """The findings of one raw MCP tool object (its description, title and schema texts)."""
    out: list[Finding] = []
    for where, text in _texts(tool):
        out.extend(scan_text(text, where))
    return out


def scan_text(text: str, where: str = "description") -> list[Finding]:
    out: list[Finding] = []
    ascii_only = text.isascii()  # the common case: no format characters, and NFKC changes nothing
    invisible = _ASCII_CONTROL.findall(text) if ascii_only else [c for c in text if _invisible(c)]
    if invisible:
        names = sorted({f"U+{ord(c):04X}" for c in invisible})
        out.append(Finding("invisible_characters", where, f"{len(invisible)} invisible or control character(s): "
                           + ", ".join(names[:6]) + (" …" if len(names) > 6 else "")))
    hidden = _hidden_after_whitespace(text)
    if hidden is not None:
        out.append(Finding("hidden_whitespace", where, f"text after a long run of whitespace: {snippet(text, hidden)}"))
    folded = " ".join(text.split()) if ascii_only else _fold(text)
    at = folded.find("<!--")
    if at >= 0:
        out.append(Finding("hidden_comment", where, f"an HTML comment: {snippet(folded, at)}"))
    for kind, pattern in (("markup_tag", _TAG), ("instruction", _PHRASES), ("sensitive_path", _PATHS)):
        match = pattern.search(folded)
        if match is not None:
            out.append(Finding(kind, where, repr(match.group(0))))
    return out


def visible(text: str) -> str:
    """`text` with invisible and control characters spelled `\\u200b` (so a reviewer sees them)."""
    return "".join(c if c in "\n\t" or not _invisible(c) else f"\\u{ord(c):04x}" if ord(c) < 0x10000
                   else f"\\U{ord(c):08x}" for c in text)


def snippet(text: str, at: int) -> str:
    part = text[at:at + _SNIPPET]
    return repr(visible(" ".join(part.split())) + ("…" if len(text) > at + _SNIPPET else ""))


def _invisible(c: str) -> bool:
    if c in "\n\t\r":
        return False
    return unicodedata.category(c) in ("Cf", "Cc")


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(text.split()).replace("’", "'")


def _hidden_after_whitespace(text: str) -> int | None:
    for match in re.finditer(r"\s+", text):
        run = match.group(0)
        if (len(run) >= WHITESPACE_RUN or run.count("\n") >= NEWLINE_RUN) and match.end() < len(text):
            return match.end()
    return None


def _texts(tool: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for key in ("description", "title"):
        value = tool.get(key)
        if isinstance(value, str):
            yield key, value
    annotations = tool.get("annotations")
    if isinstance(annotations, dict) and isinstance(annotations.get("title"), str):
        yield "/annotations/title", annotations["title"]
    for key in ("inputSchema", "outputSchema"):
        yield from _schema_texts(tool.get(key), f"/{key}", 0)


def _schema_texts(node: Any, path: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > 64:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            sub = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key in ("description", "title") and isinstance(value, str):
                yield sub, value
            else:
                yield from _schema_texts(value, sub, depth + 1)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _schema_texts(value, f"{path}/{i}", depth + 1)
