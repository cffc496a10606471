"""Result projection: every source's output becomes the model's text, the same way.

Over the Profile's inline limit the full text goes to a read-only, line-addressable file under
`tool-results/`, the raw result beside it as JSON for audit, and the model gets the size, the path,
a preview and guidance naming only the reading tools it actually has.

Secret redaction (policy/redact.py) comes first: when the Profile's policy has something to redact,
the content, structured value and raw result are redacted before anything else, so neither the
model, the records nor a spill file holds a known secret; the result carries what was replaced
(`AgentToolResult.redaction`), which the records count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from tooldeck.core.results import AgentToolResult, ToolImage, ToolOutput, as_output, image_ref
from tooldeck.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from tooldeck.policy.known_secrets import RedactionPolicy

WRAP_CHARS = 3_000
_INT_SHOWN = 10**18
"""Ints below this size take the fast path (a huge int's str() can raise; `as_output` handles it)."""
TOOL_RESULTS_ROOT = "tool-results"
READ_TOOL_ID = "builtin:workspace.read_file"
SEARCH_TOOL_ID = "builtin:workspace.search_files"
FILES_READ_TOOL_ID = "builtin:read_files"
FILES_SEARCH_TOOL_ID = "builtin:find_files"


def call_stem(call_id: str) -> str:
    return "call_" + hashlib.sha256(call_id.encode()).hexdigest()[:16]


def hard_wrap(text: str, width: int = WRAP_CHARS) -> str:
    """No line longer than `width` characters, so the file can be read by line number."""
    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
        else:
            out.extend(line[i:i + width] for i in range(0, len(line), width))
    return "\n".join(out)


def _json_default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, bytes | bytearray):
        return {"bytes": len(value)}
    return repr(value)


def dump_json(value: Any) -> bytes:
    return orjson.dumps(value, default=_json_default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)


@dataclass(frozen=True, slots=True)
class Guidance:
    read_name: str | None
    search_name: str | None
    files_read_name: str | None = None
    """Agenvoy's `read_files`, named when the snapshot has no `workspace_read_file` (builtins = "agenvoy")."""
    files_search_name: str | None = None
    """Agenvoy's `find_files`, named when the snapshot has no `workspace_search_files`."""

    @classmethod
    def for_snapshot(cls, snapshot: Snapshot) -> Guidance:
        names = {b.tool_id: b.call_name for b in snapshot.bindings}
        read, search = names.get(READ_TOOL_ID), names.get(SEARCH_TOOL_ID)
        return cls(read, search, None if read else names.get(FILES_READ_TOOL_ID),
                   None if search else names.get(FILES_SEARCH_TOOL_ID))

    def lines(self) -> list[str]:
        out = []
        if self.read_name:
            out.append(f"Use `{self.read_name}` with this path to read the full result. If the reader returns "
                       "another preview, continue from the next line it indicates.")
        elif self.files_read_name:
            out.append(f"Use `{self.files_read_name}` with files=[{{\"path\": <this path>}}] to read the full result; "
                       "a cut file says which offset to read next.")
        if self.search_name:
            out.append(f"Use `{self.search_name}` on the same path to find specific text.")
        elif self.files_search_name:
            out.append(f"Use `{self.files_search_name}` with mode=search, dir the path's folder and file_pattern "
                       "its file name to find specific text.")
        return out


class Projector:
    def __init__(self, workspace_root: Path, invocation_id: str, inline_limit: int, preview_chars: int,
                 guidance: Guidance, secrets: RedactionPolicy | None = None) -> None:
        self.secrets = secrets
        """The Profile's redaction policy (its `redactor` is None while there is nothing to redact)."""
        self.workspace_root = workspace_root
        self.invocation_id = invocation_id
        self.inline_limit = inline_limit
        self.preview_chars = preview_chars
        self.guidance = guidance

    def project(self, call_id: str, tool_id: str | None, round_no: int, output: ToolOutput | Any) -> AgentToolResult:
        """`output` is a ToolOutput, or the plain value a tool returned (see `as_output`)."""
        redactor = self.secrets.redactor if self.secrets is not None else None  # a property: once per result
        if redactor is not None:
            clean, redaction = redactor.output(as_output(output))
            if redaction is not None:
                result = self._project(call_id, tool_id, round_no, clean)
                result.redaction = redaction
                return result
            output = clean
        kind = type(output)
        if kind is not ToolOutput:
            # The most common plain values skip the intermediate ToolOutput.
            if kind is str:
                if len(output) <= self.inline_limit:
                    return AgentToolResult(call_id, tool_id, output, None, False, None, [])
            elif kind is int and -_INT_SHOWN < output < _INT_SHOWN:
                return AgentToolResult(call_id, tool_id, str(output), output, False, None, [])
            output = as_output(output)
        return self._project(call_id, tool_id, round_no, output)

    def _project(self, call_id: str, tool_id: str | None, round_no: int, output: ToolOutput) -> AgentToolResult:
        content = output.content
        if len(content) <= self.inline_limit:
            refs = output.resource_refs
            result = AgentToolResult(call_id, tool_id, content, output.structured, output.is_error,
                                     output.error_code, list(refs) if refs else [], output.redacted)
            if output.images:
                _attach(result, output.images)
            return result
        if output.redacted is not None:  # a spill file would keep in clear what the records must not
            result = AgentToolResult(call_id, tool_id, content, output.structured, output.is_error,
                                     output.error_code, list(output.resource_refs), output.redacted)
            _attach(result, output.images)
            return result
        return self._spill(call_id, tool_id, round_no, output)

    def _spill(self, call_id: str, tool_id: str | None, round_no: int, output: ToolOutput) -> AgentToolResult:
        rel_dir = f"{TOOL_RESULTS_ROOT}/{self.invocation_id}"
        directory = self.workspace_root / rel_dir
        directory.mkdir(parents=True, exist_ok=True)
        stem = f"round-{round_no:03d}-{call_stem(call_id)}"
        text_path, audit_path = _exclusive_pair(directory, stem)
        text_path.write_text(hard_wrap(output.content), encoding="utf-8")
        audit = {
            "call_id": call_id, "tool_id": tool_id, "is_error": output.is_error, "error_code": output.error_code,
            "structured": output.structured, "resource_refs": output.resource_refs,
            "raw": output.raw if output.raw is not None else output.content,
        }
        audit_path.write_bytes(dump_json(audit))
        rel_text = f"{rel_dir}/{text_path.name}"
        rel_audit = f"{rel_dir}/{audit_path.name}"
        n = len(output.content)
        preview = output.content[: self.preview_chars]
        parts = [f"This tool result is too large to include in full ({n} characters). "
                 f"The full result is saved at `{rel_text}`.", *self.guidance.lines(), "",
                 "## Prefix preview", "",
                 f"At most {self.preview_chars} characters from the start; this is not the complete result.", "",
                 preview]
        structured = {"externalized": True, "path": rel_text, "audit_path": rel_audit, "char_count": n,
                      "char_limit": self.inline_limit, "source": output.structured}
        result = AgentToolResult(call_id, tool_id, "\n".join(parts), structured, output.is_error, output.error_code,
                                 [*output.resource_refs, rel_text, rel_audit])
        _attach(result, output.images)
        return result


def _attach(result: AgentToolResult, images: Sequence[ToolImage]) -> None:
    """The output's images go with the result, and their refs (`image:<mime>:<path>`) with its resource refs, so
    the records keep which copies the model got (replay sends them again) and never the bytes."""
    if images:
        result.images = list(images)
        result.resource_refs.extend(image_ref(i) for i in images)


def _exclusive_pair(directory: Path, stem: str) -> tuple[Path, Path]:
    """Spill files are write-once; a repeated call id in one round gets `-2`, `-3`…"""
    n = 1
    while True:
        name = stem if n == 1 else f"{stem}-{n}"
        text_path, audit_path = directory / f"{name}.txt", directory / f"{name}.json"
        try:
            text_path.open("x").close()
        except FileExistsError:
            n += 1
            continue
        return text_path, audit_path
