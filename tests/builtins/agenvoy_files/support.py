"""Helpers of the Agenvoy file family's tests: a runtime offering the family, one call at a time, and
documents made in the test (PDF with pypdf, DOCX with python-docx, a PNG by hand)."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import tooldeck
from tests.conftest import MakeRuntime
from tooldeck.core.results import AgentToolResult

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
                       "rkJggg==")


class Session:
    """One run of a runtime whose Profile offers the Agenvoy family; `call` runs one tool call."""

    def __init__(self, rt: tooldeck.Runtime, run_id: str = "r1") -> None:
        self.rt = rt
        self.run_id = run_id
        self.root = Path(rt.run_state(run_id).workspace_root)
        self._n = 0

    def call(self, name: str, args: dict[str, Any] | str) -> AgentToolResult:
        self._n += 1
        inv = self.rt.invocation(run_id=self.run_id)
        [result] = inv.run([{"id": f"c{self._n}", "name": name, "arguments": args}])
        return result

    def ok(self, name: str, args: dict[str, Any]) -> AgentToolResult:
        result = self.call(name, args)
        assert not result.is_error, (result.error_code, result.content)
        return result

    def batch(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return json.loads(self.ok(name, args).content)

    def write(self, rel: str, data: bytes | str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path


def session(make_runtime: MakeRuntime, records: bool = False, **profile: Any) -> Session:
    """The Profile's `builtins` key goes in `profile=` (the factory's own `builtins=` is the tool list)."""
    profile.setdefault("builtins", "agenvoy")
    return Session(make_runtime(records=records, profile=profile))


def pdf_bytes(pages: list[str]) -> bytes:
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    for text in pages:
        page = writer.add_blank_page(612, 792)
        font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                                 NameObject("/BaseFont"): NameObject("/Helvetica")})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/F1"): font})})
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode("latin-1"))
        page.replace_contents(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_bytes(paragraphs: list[str], table: list[list[str]] | None = None) -> bytes:
    import docx

    document = docx.Document()
    for p in paragraphs:
        document.add_paragraph(p)
    if table:
        t = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, cell in enumerate(row):
                t.rows[r].cells[c].text = cell
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()
