"""Small pieces of the shell package, checked directly."""

from __future__ import annotations

import os
from pathlib import Path

from bashkit import FileSystem

from tooldeck.catalog.profile import WorkspaceRoots
from tooldeck.shell.background import keyword_pattern, tail
from tooldeck.shell.js_modules import build_graph, looks_like_module
from tooldeck.shell.layout import Layout
from tooldeck.shell.output import CappedText, clip, render
from tooldeck.shell.vfs import resolve


def test_render_orders_header_stdout_stderr_and_cap_note() -> None:
    assert render("Exit code: 0", "a\n", "", False) == "Exit code: 0\na"
    assert render("Exit code: 1", "", "e\n", False) == "Exit code: 1\ne"
    assert render("Exit code: 1", "a", "e", True) == "Exit code: 1\na\nstderr:\ne\nOutput truncated."
    assert render("Command timed out.", "", "", False) == "Command timed out."


def test_caps_count_utf8_bytes_and_cut_on_characters() -> None:
    text, cut = clip("é" * 10, 5)
    assert cut and text == "éé"
    buf = CappedText(4)
    buf.write("ab")
    buf.write("cdef")
    assert buf.text == "abcd" and buf.truncated


def test_resolve_never_climbs_above_root() -> None:
    assert resolve("/output", "../../../etc") == "/etc"
    assert resolve("/output/a", "./b/../c") == "/output/a/c"
    assert resolve("/", "//x") == "/x"


def test_keywords_are_configurable_and_match_words() -> None:
    default = keyword_pattern(("error", "failed", "traceback"))
    assert default.search("Traceback (most recent call last):")
    assert default.search("3 tests FAILED")
    assert not default.search("no errors here")  # `errors` is not `error`
    custom = keyword_pattern(("boom",))
    assert custom.search("it went BOOM") and not custom.search("error")
    assert not keyword_pattern(()).search("error")
    assert tail("\n".join(str(i) for i in range(100)), 3) == "97\n98\n99"


def test_layout_mounts_visible_roots_and_skips_symlinked_ones(tmp_path: Path) -> None:
    (tmp_path / "ws" / "skills").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "ws" / "plan")
    mounts, notes = Layout.for_workspace(tmp_path / "ws", WorkspaceRoots()).mounts()
    names = {m.name: m.writable for m in mounts}
    assert names == {"output": True, "scratch": True, "summaries": True, "persist": True, "skills": False}
    assert "tool-results" not in names  # read-only and absent: not created
    assert any("/plan is a symbolic link" in n for n in notes)
    assert not (tmp_path / "ws" / "input").exists()


def test_module_graph_rewrites_relative_imports_only() -> None:
    fs = FileSystem()
    fs.mkdir("/output/lib", True)
    fs.write_file("/output/lib/a.js", b"import { b } from './b.mjs'; export const a = b + 1;")
    fs.write_file("/output/lib/b.mjs", b"export const b = 1;")
    source = "import { a } from './lib/a.js';\nimport fs from 'fs';\n// copied from './nowhere.js'\nconsole.log(a)"
    entry, graph = build_graph(fs, "/output/main.js", source, 1 << 20)
    assert "from '/output/lib/a.js'" in entry
    assert "from 'fs'" in entry and "'./nowhere.js'" in entry
    assert set(graph.modules) == {"/output/lib/a.js", "/output/lib/b.mjs"}
    assert "from '/output/lib/b.mjs'" in graph.modules["/output/lib/a.js"]
    assert looks_like_module(source) and not looks_like_module("console.log(1)")
    assert looks_like_module("x", "/a/b.mjs")


def test_cancel_stops_a_run_and_maps_to_shell_cancelled(tmp_path: Path) -> None:
    import threading

    from tooldeck.builtins.shell import to_output
    from tooldeck.shell import ShellLimits, ShellRun, Status

    started = threading.Event()

    def seen(out: str, _err: str) -> None:
        if "started" in out:
            started.set()

    def cancel_once_started() -> None:  # on the real event (the command got going), not after a guess
        if started.wait(120):
            run.cancel()

    run = ShellRun(Layout.for_workspace(tmp_path, WorkspaceRoots()), ShellLimits(timeout_s=120), on_output=seen)
    threading.Thread(target=cancel_once_started, daemon=True).start()
    result = run.run("echo kept > /output/c.txt; echo started; for i in $(seq 1 200); do sleep 0.1; done; echo late")
    assert started.is_set()
    assert result.status is Status.CANCELLED and "late" not in result.stdout
    assert result.duration_s < 20  # the loop alone takes 20 s: it was stopped, not waited out
    out = to_output(result, 10)
    assert out.error_code == "workspace.shell_cancelled" and out.content.startswith("Command cancelled.")
    assert (tmp_path / "output" / "c.txt").read_text() == "kept\n"
