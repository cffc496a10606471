"""`open_file`: offered only with a desktop opener on PATH and an interactive origin; it hands the file's
real path to the opener (a stand-in script on PATH here) and reports the opener's failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import MakeRuntime
from tooldeck.builtins.open_file import desktop_opener


def _opener(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / desktop_opener()
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return folder


def test_offered_only_with_an_opener_and_an_interactive_origin(make_runtime: MakeRuntime, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    rt = make_runtime(loading="eager", allow=["builtin:open_file"])
    assert "open_file" not in rt.invocation().call_names()
    bin_dir = _opener(tmp_path / "bin", 'echo "$1" > "$(dirname "$0")/opened"')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert "open_file" in rt.invocation().call_names()
    assert "open_file" not in rt.invocation(headless=True).call_names()


def test_the_opener_gets_the_real_path_and_its_failure_is_reported(make_runtime: MakeRuntime, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _opener(tmp_path / "bin", 'echo "$1" > "$(dirname "$0")/opened"')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    rt = make_runtime(loading="eager", allow=["builtin:open_file", "builtin:workspace.write_file"])
    inv = rt.invocation()
    inv.run([{"id": "w", "name": "workspace_write_file", "arguments": {"path": "output/page.html", "content": "<p>"}}])
    [opened] = inv.run([{"id": "o", "name": "open_file", "arguments": {"path": "output/page.html"}}])
    assert not opened.is_error, opened.content
    assert (bin_dir / "opened").read_text().strip() == str(inv.run_state.workspace_root / "output" / "page.html")
    [missing] = inv.run([{"id": "m", "name": "open_file", "arguments": {"path": "output/none.html"}}])
    assert missing.is_error
    _opener(bin_dir, 'echo "no display" >&2; exit 3')
    [failed] = inv.run([{"id": "f", "name": "open_file", "arguments": {"path": "output/page.html"}}])
    assert failed.is_error and failed.error_code == "open_file.failed" and "exit code 3: no display" in failed.content
