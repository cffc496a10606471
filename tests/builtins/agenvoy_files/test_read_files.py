"""`read_files` against real temp workspaces: the batch answer, text rows and pages, Agenvoy's per-file
texts, PDF pages and DOCX text made in the test, CSV/TSV rows, images as image content (in-process through
the relay sink, and over MCP through a real `tooldeck serve`), and the read-state edit_file relies on."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import mcp_types as types
import pytest

from tests.builtins.agenvoy_files.support import PNG, Session, docx_bytes, pdf_bytes, session
from tests.conftest import MakeRuntime
from tests.server.support import serve_client
from tooldeck.sources.mcp.relay import collect_results


@pytest.fixture
def s(make_runtime: MakeRuntime) -> Session:
    return session(make_runtime)


def test_a_batch_answers_every_file_and_errors_per_file(s: Session) -> None:
    s.write("output/a.md", "alpha\nbeta\n")
    s.write("output/empty.md", "")
    s.write("output/bin.dat", b"ab\0cd")
    s.write("output/latin.txt", "caf\xe9".encode("latin-1"))
    got = s.batch("read_files", {"files": [{"path": "output/a.md"}, {"path": "output/missing.md"},
                                           {"path": "output/empty.md"}, {"path": "output/bin.dat"},
                                           {"path": "input/x.md"}, {"path": "output/latin.txt"},
                                           {"path": "output/a.md", "offset": 2}]})
    assert got["output/a.md"] == "1\talpha\n2\tbeta"
    assert got["output/a.md (2)"] == "2\tbeta"  # a path may repeat
    assert got["output/missing.md"].startswith("error: `output/missing.md` does not exist")
    assert got["output/empty.md"] == "error: output/empty.md is empty"
    assert got["output/bin.dat"] == "error: output/bin.dat is binary file"
    assert got["input/x.md"].startswith("error: `input/x.md` is not in the visible workspace")
    assert got["output/latin.txt"].startswith("error: output/latin.txt is not UTF-8 text")


def test_text_pages_and_offsets(s: Session) -> None:
    s.write("output/long.txt", "".join(f"line {i}\n" for i in range(1, 3001)))
    page = s.batch("read_files", {"files": [{"path": "output/long.txt"}]})["output/long.txt"].split("\n")
    assert page[0] == "   1\tline 1" and page[2047] == "2048\tline 2048"
    assert page[-1] == "… rows 1-2048 of 3000; continue with offset=2049"
    got = s.batch("read_files", {"files": [{"path": "output/long.txt", "offset": 2999, "limit": 5},
                                           {"path": "output/long.txt", "offset": 3001}]})
    assert got["output/long.txt"] == "2999\tline 2999\n3000\tline 3000"
    assert got["output/long.txt (2)"] == "error: offset 3001 exceeds(output/long.txt) 3000"


def test_text_over_one_mib_is_refused_with_its_size(s: Session) -> None:
    s.write("output/big.txt", "x" * (3 * 1024 * 1024 // 2))
    got = s.batch("read_files", {"files": [{"path": "output/big.txt"}]})
    assert got["output/big.txt"] == "error: file too large (1 MB): 1.5 MB"


def test_pdf_pages(s: Session) -> None:
    s.write("output/doc.pdf", pdf_bytes(["First page text", "Second page", "Third (and last)"]))
    got = s.batch("read_files", {"files": [{"path": "output/doc.pdf"},
                                           {"path": "output/doc.pdf", "offset": 2, "limit": 1},
                                           {"path": "output/doc.pdf", "offset": 4}]})
    assert got["output/doc.pdf"] == ("--- page 1/3 ---\nFirst page text\n--- page 2/3 ---\nSecond page\n"
                                     "--- page 3/3 ---\nThird (and last)")
    assert got["output/doc.pdf (2)"] == ("--- page 2/3 ---\nSecond page\n… pages 2-2 of 3; continue with offset=3")
    assert got["output/doc.pdf (3)"] == "error: offset 4 exceeds(output/doc.pdf) 3"


def test_a_broken_pdf_is_an_answer_for_that_file(s: Session) -> None:
    s.write("output/broken.pdf", b"%PDF-1.7\n" + b"garbage " * 100)
    got = s.batch("read_files", {"files": [{"path": "output/broken.pdf"}]})
    assert got["output/broken.pdf"].startswith("error: the PDF cannot be read")


def test_docx_text_and_tables(s: Session) -> None:
    s.write("output/memo.docx", docx_bytes(["Dear team,", "The plan is ready."], [["who", "what"], ["ana", "code"]]))
    got = s.batch("read_files", {"files": [{"path": "output/memo.docx"}]})
    assert got["output/memo.docx"] == ("1\tDear team,\n2\tThe plan is ready.\n3\t\n4\twho | what\n5\tana | code")


def test_a_missing_parser_says_which_extra_to_install(s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    s.write("output/doc.pdf", pdf_bytes(["x"]))
    s.write("output/memo.docx", docx_bytes(["x"]))
    monkeypatch.setitem(sys.modules, "pypdf", None)  # `import pypdf` raises ImportError, as without the extra
    monkeypatch.setitem(sys.modules, "docx", None)
    got = s.batch("read_files", {"files": [{"path": "output/doc.pdf"}, {"path": "output/memo.docx"}]})
    assert got["output/doc.pdf"] == "error: reading PDF needs pypdf; install the documents extra: pip install " \
        "'tooldeck[documents]'"
    assert got["output/memo.docx"].startswith("error: reading DOCX needs python-docx; install the documents extra")


def test_csv_and_tsv_rows(s: Session) -> None:
    s.write("output/t.csv", 'name,note\nana,"two\nlines"\nbo,"a, b"\n')
    s.write("output/t.tsv", "a\tb\n1\t2\n")
    got = s.batch("read_files", {"files": [{"path": "output/t.csv"}, {"path": "output/t.csv", "offset": 3},
                                           {"path": "output/t.tsv"}]})
    assert got["output/t.csv"] == '1\t["name","note"]\n2\t["ana","two\\nlines"]\n3\t["bo","a, b"]'
    assert got["output/t.csv (2)"] == '3\t["bo","a, b"]'
    assert got["output/t.tsv"] == '1\t["a","b"]\n2\t["1","2"]'


def test_an_image_is_image_content_where_the_client_takes_it(s: Session) -> None:
    s.write("output/px.png", PNG)
    s.write("output/a.md", "text\n")
    inv = s.rt.invocation(run_id=s.run_id)
    with collect_results() as sink:
        [result] = inv.run([{"id": "img1", "name": "read_files",
                             "arguments": {"files": [{"path": "output/px.png"}, {"path": "output/a.md"}]}}])
    got = json.loads(result.content)
    assert got["output/px.png"].startswith("image (image/png, 70 bytes): sent as image content")
    blocks = sink["img1"].content
    assert [b.type for b in blocks] == ["text", "image"]
    assert blocks[0].text == result.content
    assert blocks[1].mime_type == "image/png" and base64.b64decode(blocks[1].data) == PNG
    # without a gateway's sink, the text alone (providers take text)
    assert json.loads(s.ok("read_files", {"files": [{"path": "output/px.png"}]}).content)


def test_an_image_over_ten_mib_is_refused(s: Session) -> None:
    s.write("output/huge.png", PNG + b"\0" * (10 * 1024 * 1024))
    got = s.batch("read_files", {"files": [{"path": "output/huge.png"}]})
    assert got["output/huge.png"] == "error: image too large (10 MB): 10.0 MB"


def test_a_full_read_lets_edit_file_write_and_a_partial_one_only_patch_what_was_seen(s: Session) -> None:
    s.write("output/a.md", "one\ntwo\nthree\n")
    assert s.call("edit_file", {"path": "output/a.md", "content": "x\n"}).error_code == "workspace.write_requires_read"
    s.ok("read_files", {"files": [{"path": "output/a.md", "offset": 2, "limit": 1}]})
    unseen = s.call("edit_file", {"path": "output/a.md", "targets": [{"old_string": "three", "new_string": "3"}]})
    assert unseen.error_code == "workspace.patch_requires_full_read"
    s.ok("edit_file", {"path": "output/a.md", "targets": [{"old_string": "two", "new_string": "2"}]})
    assert (s.root / "output/a.md").read_text() == "one\n2\nthree\n"
    s.ok("read_files", {"files": [{"path": "output/a.md"}]})
    s.ok("edit_file", {"path": "output/a.md", "content": "fresh\n"})


async def test_image_blocks_reach_an_mcp_client_of_tooldeck_serve(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "profile.toml").write_text('builtins = "agenvoy"\n')
    async with serve_client(home, "stdio") as client:
        first = await client.call_tool("find_files", {"queries": [{"dir": "."}]})
        assert first.is_error is False
        [workspace] = list((home / "workspaces").iterdir())
        (workspace / "output" / "px.png").write_bytes(PNG)
        result = await client.call_tool("read_files", {"files": [{"path": "output/px.png"}]})
    assert [b.type for b in result.content] == ["text", "image"]
    image = result.content[1]
    assert isinstance(image, types.ImageContent) and base64.b64decode(image.data) == PNG
    assert json.loads(result.content[0].text)["output/px.png"].startswith("image (image/png")


def test_a_spilled_batch_names_read_files_and_read_files_reads_it_back(s: Session) -> None:
    for i in range(20):
        s.write(f"output/f{i}.md", f"file {i}\n" + "word " * 800 + "\n")
    r = s.ok("read_files", {"files": [{"path": f"output/f{i}.md"} for i in range(20)]})
    spilled = r.structured["path"]
    assert r.structured["externalized"] is True and spilled.startswith("tool-results/")
    assert 'Use `read_files` with files=[{"path": <this path>}] to read the full result' in r.content
    assert "Use `find_files` with mode=search, dir the path's folder and file_pattern its file name" in r.content
    back = s.batch("read_files", {"files": [{"path": spilled, "limit": 2}]})[spilled]
    assert back.startswith("1\t{\n2\t  \"output/f0.md\": \"1\\tfile 0\\n2\\tword ")
    folder, name = spilled.rsplit("/", 1)
    found = s.ok("find_files", {"mode": "search", "queries": [{"dir": folder, "pattern": "f19.md",
                                                                "file_pattern": name}]})
    assert found.structured["total"] == 1
