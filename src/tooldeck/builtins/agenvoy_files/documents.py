"""Documents `read_files` turns into text: PDF pages (`pypdf`), DOCX text (`python-docx`), CSV/TSV rows,
and what an image file is.

`pypdf` and `python-docx` are the optional extra `tooldeck[documents]`; they are imported when a PDF or
DOCX is read, and a missing one is an answer for that file (`DocumentError`) that says what to install.
Every parser works on bytes already read through the workspace engine (never on a path), and each
failure of a hostile or broken file is a `DocumentError`, never an exception out of the tool.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Final

import orjson

MAX_IMAGE_BYTES: Final = 10 * 1024 * 1024
MAX_PDF_PAGES: Final = 2000
MAX_CSV_FIELD: Final = 1024 * 1024
IMAGE_TYPES: Final = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
EXTRA_HINT: Final = "install the documents extra: pip install 'tooldeck[documents]'"


class DocumentError(Exception):
    """A document that cannot be turned into text; the message is the answer for that file."""


def image_type(data: bytes) -> str | None:
    """The MIME type of an image by its first bytes (PNG, JPEG, GIF, WebP), or None."""
    for magic, mime in IMAGE_TYPES.items():
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def kind_of(name: str, data: bytes) -> str:
    """`pdf`, `docx`, `csv`, `tsv`, `image` or `text`, by the file's first bytes and its name."""
    lower = name.lower()
    if data.startswith(b"%PDF-"):
        return "pdf"
    if image_type(data) is not None:
        return "image"
    if lower.endswith(".docx") and data.startswith(b"PK"):
        return "docx"
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(".tsv"):
        return "tsv"
    return "text"


def pdf_pages(data: bytes) -> list[str]:
    """The text of each page of a PDF."""
    try:
        import pypdf
    except ImportError:
        raise DocumentError(f"reading PDF needs pypdf; {EXTRA_HINT}") from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise DocumentError("the PDF is encrypted; it cannot be read without its password")
        count = len(reader.pages)
        if count > MAX_PDF_PAGES:
            raise DocumentError(f"the PDF has {count:,} pages, over the {MAX_PDF_PAGES:,} read_files reads")
        return [(page.extract_text() or "").strip() for page in reader.pages]
    except DocumentError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a broken file; each is an answer for this file
        raise DocumentError(f"the PDF cannot be read: {type(exc).__name__}: {exc}") from None


def docx_text(data: bytes) -> str:
    """The paragraphs of a DOCX, then its tables (one row a line, cells joined by ` | `)."""
    try:
        import docx
    except ImportError:
        raise DocumentError(f"reading DOCX needs python-docx; {EXTRA_HINT}") from None
    try:
        document = docx.Document(io.BytesIO(data))
        lines = [p.text for p in document.paragraphs]
        for table in document.tables:
            lines.append("")
            lines.extend(" | ".join(cell.text for cell in row.cells) for row in table.rows)
        return "\n".join(lines).strip("\n")
    except Exception as exc:  # a zip that is not a DOCX, broken XML …
        raise DocumentError(f"the DOCX cannot be read: {type(exc).__name__}: {exc}") from None


def table_rows(text: str, delimiter: str) -> Iterator[str]:
    """Each row of a CSV/TSV as a JSON array of its fields (one row a line, quoted fields kept whole)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for row in reader:
            yield orjson.dumps(row).decode()
    except csv.Error as exc:
        raise DocumentError(f"the file is not valid {'CSV' if delimiter == ',' else 'TSV'} at row "
                            f"{reader.line_num}: {exc}") from None


def field_limit() -> None:
    """Fields up to 1 MiB (the text cap) instead of csv's 128 KiB default."""
    if csv.field_size_limit() < MAX_CSV_FIELD:
        csv.field_size_limit(MAX_CSV_FIELD)
