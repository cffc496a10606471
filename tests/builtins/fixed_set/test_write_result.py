"""write_result: a report saved as `report-<timestamp>.<md|html>` in the workspace's output root, its path
returned, never overwriting a file (a second report in the same second, a file already there)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builtins.fixed_set.support import call
from tests.conftest import MakeRuntime
from tooldeck.builtins import write_result as wr
from tooldeck.workspace import effects

NAME = re.compile(r"output/report-\d{8}-\d{6}(-\d+)?\.(md|html)")


def test_a_markdown_report_lands_in_output_with_its_path(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    result = call(inv, "write_result", {"content": "# Report\n\nAll good.\n"})
    path = result.structured["path"]
    assert NAME.fullmatch(path) and path.endswith(".md")
    assert result.content == f"successfully created: {path} (20 bytes, 3 lines on disk)"
    assert (rt.run_state("r").workspace_root / path).read_text() == "# Report\n\nAll good.\n"
    assert [c.path for c in effects.changed_files(inv)] == [path]


def test_html_and_a_second_report_in_the_same_second_get_distinct_names(make_runtime: MakeRuntime,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wr, "stamp", lambda now=None: "20260101-120000")
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    root = rt.run_state("r").workspace_root
    (root / "output").mkdir(parents=True, exist_ok=True)
    (root / "output" / "report-20260101-120000-2.html").write_text("someone else's")
    paths = [call(inv, "write_result", {"content": f"<p>{i}</p>", "format": "html"}, f"c{i}").structured["path"]
             for i in range(3)]
    assert paths == ["output/report-20260101-120000.html", "output/report-20260101-120000-3.html",
                     "output/report-20260101-120000-4.html"]
    assert (root / "output" / "report-20260101-120000-2.html").read_text() == "someone else's"
    assert [(root / p).read_text() for p in paths] == ["<p>0</p>", "<p>1</p>", "<p>2</p>"]


def test_no_free_name_writes_nothing(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wr, "stamp", lambda now=None: "20260101-120000")
    monkeypatch.setattr(wr, "MAX_TRIES", 2)
    rt = make_runtime()
    out = rt.run_state("r").workspace_root / "output"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("report-20260101-120000.md", "report-20260101-120000-2.md"):
        (out / name).write_text("taken")
    result = call(rt.invocation(run_id="r"), "write_result", {"content": "x"})
    assert result.error_code == wr.NO_FREE_NAME
    assert sorted(p.name for p in out.iterdir()) == ["report-20260101-120000-2.md", "report-20260101-120000.md"]


def test_the_output_root_follows_the_profile(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(workspace={"writable": ["deliverables", "scratch"], "body_file": "deliverables/main.md"})
    result = call(rt.invocation(run_id="r"), "write_result", {"content": "hi"})
    assert result.structured["path"].startswith("deliverables/report-")


@pytest.mark.parametrize(("args", "code", "message"), [
    ({"content": "  \n"}, wr.EMPTY_CONTENT, "content is empty; pass the whole report text in `content`."),
    ({"content": "x", "format": "pdf"}, wr.INVALID_FORMAT, 'format must be "md" or "html", got "pdf"'),
])
def test_bad_arguments_write_nothing(make_runtime: MakeRuntime, args: dict[str, str], code: str,
                                     message: str) -> None:
    rt = make_runtime()
    result = call(rt.invocation(run_id="r"), "write_result", args)
    assert result.error_code == code and result.content == message
    assert not (rt.run_state("r").workspace_root / "output").exists()


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(max_size=200), fmt=st.one_of(st.none(), st.sampled_from(["md", "html"]), st.text(max_size=5)))
def test_decoding_any_arguments_creates_one_new_file_or_none(make_runtime: MakeRuntime, content: str,
                                                             fmt: str | None) -> None:
    rt = make_runtime()
    inv = rt.invocation()
    out = inv.run_state.workspace_root / "output"
    before = set(out.iterdir()) if out.exists() else set()
    args = {"content": content} if fmt is None else {"content": content, "format": fmt}
    result = call(inv, "write_result", args)
    after = set(out.iterdir()) if out.exists() else set()
    if result.is_error:
        assert after == before
        if not content.strip():
            assert result.error_code == wr.EMPTY_CONTENT
        elif fmt not in (None, "", "md", "html"):
            assert result.error_code == wr.INVALID_FORMAT
        else:  # text no UTF-8 file can hold (a lone surrogate): the workspace's own refusal
            assert result.error_code is not None and result.error_code.startswith("workspace.")
        return
    [new] = after - before
    assert Path(result.structured["path"]).name == new.name and new.read_bytes() == content.encode()
    rt.close()
