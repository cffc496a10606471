"""The commands in the docs run as written (issue 13.7): the README's CLI block line by line in a fresh
home, and docs/serve.md's Python snippet against a real `tooldeck serve`."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from .support import ROOT, TOOLDECK, env

PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]{2,}$")
# Placeholders the test fills in; a line with any other one is not run (and the test says which).
KNOWN_UNFILLED = {"SERVER"}


def code_block(path: Path, after_heading: str, language: str) -> str:
    text = path.read_text(encoding="utf-8")
    section = text[text.index(after_heading):]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"no {language} block after {after_heading!r} in {path}"
    return match.group(1)


def _wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 60) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            if needle in line:
                return line
    raise AssertionError(f"no {needle!r} from {proc.args} (exit {proc.poll()})")


def _serve(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Start a README `tooldeck serve` line, wait until it serves, stop it as a user would (SIGTERM)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        if "--stdio" in argv:  # stdin is closed: it serves, reads the end of input and stops by itself
            _, err = proc.communicate(timeout=60)
            return proc.returncode, err
        _wait_for_line(proc, "serving MCP on http://127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        return proc.returncode, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_every_readme_cli_line_runs_in_a_fresh_home(tmp_path: Path) -> None:
    lines = [line for line in code_block(ROOT / "README.md", "## CLI", "sh").splitlines() if line.strip()]
    assert len(lines) >= 10
    filled: dict[str, str] = {}
    ran, skipped = [], []
    for line in lines:
        words = shlex.split(line, comments=True)
        assert words[0] == "tooldeck", line
        if "INVOCATION_ID" in words and "INVOCATION_ID" not in filled:
            listed = subprocess.run([TOOLDECK, "records", "list", "--json"], cwd=tmp_path, env=env(),
                                    capture_output=True, text=True, timeout=60)
            filled["INVOCATION_ID"] = json.loads(listed.stdout)[0]["invocation_id"]
        words = [filled.get(w, w) for w in words]
        unfilled = [w for w in words if PLACEHOLDER.match(w)]
        if unfilled:
            assert set(unfilled) <= KNOWN_UNFILLED, f"{line!r}: fill {unfilled} in this test, or drop them"
            skipped.append(line)
            continue
        argv = [TOOLDECK, *words[1:]]
        if words[1] == "serve":
            code, err = _serve(argv, tmp_path)
        else:
            proc = subprocess.run(argv, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
            code, err = proc.returncode, proc.stderr
        assert code == 0, f"{line!r} exited {code}: {err}"
        assert "Traceback" not in err, line
        ran.append(line)
    assert (tmp_path / ".tooldeck" / "records.sqlite").is_file()  # the default home, in the current directory
    assert len(ran) == len(lines) - len(skipped) and len(skipped) <= 1, skipped


def test_the_serve_docs_python_snippet_runs_against_the_default_server(tmp_path: Path) -> None:
    snippet = code_block(ROOT / "docs" / "serve.md", "## Plugging it into an MCP client", "python")
    assert "http://127.0.0.1:8808/mcp" in snippet
    proc = subprocess.Popen([TOOLDECK, "serve", "--home", str(tmp_path / "home"), "--http", "127.0.0.1:0"],
                            cwd=tmp_path, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = _wait_for_line(proc, "serving MCP on ").split(" on ", 1)[1].split()[0]
        script = tmp_path / "snippet.py"
        script.write_text(snippet.replace("http://127.0.0.1:8808/mcp", url), encoding="utf-8")
        ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                             env={**os.environ})
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.splitlines()[0] == ("['find_tools', 'run_tool', 'reasoning_guide', 'write_todo', "
                                              "'chat_history', 'ask_user', 'write_result']"), ran.stdout
        assert re.fullmatch(r"Rolled 2d6\+1: \d \+ \d \+ 1 = \d+\.", ran.stdout.splitlines()[1]), ran.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
