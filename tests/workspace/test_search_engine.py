"""The search cannot freeze the process: RE2 matches in linear time with the interpreter lock released,
a deadline or a cancellation stops the work itself (not only the answer), and patterns RE2 cannot take
are refused with what to write instead."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tests.workspace.conftest import Model

HOSTILE = r"^(a+)+$|1[01]{25}2"
"""Catastrophic backtracking for a backtracking engine (the `a` lines), and the slowest kind of input for
RE2 (random 0/1 text blows up its DFA, so it runs its NFA): the worst case for either engine."""


@pytest.fixture
def lean(make_runtime: MakeRuntime) -> Model:
    return Model(make_runtime(home="home", records=False).invocation(profile={"max_calls_per_invocation": 1_000}))


_DIGIT = bytes(0x30 + (b & 1) for b in range(256))


def binary_digits(path: Path, size: int, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(random.Random(seed).randbytes(size).translate(_DIGIT))


REPRODUCER = textwrap.dedent('''
    import sys
    import tooldeck
    rt = tooldeck.open(sys.argv[1], records=False)
    inv = rt.invocation()
    (inv.run_state.workspace_root / "scratch").mkdir(parents=True, exist_ok=True)
    (inv.run_state.workspace_root / "scratch" / "w.txt").write_text("a" * 28 + "!\\n")
    [r] = inv.run([{"id": "c", "name": "workspace_search_files", "arguments": {"pattern": "^(a+)+$"}}])
    print(r.error_code, r.structured["total"], r.structured["searchedFiles"])
''')


def test_the_reproducer_returns_promptly(tmp_path: Path) -> None:
    """`^(a+)+$` over 28 `a`s and a `!` ran 28 s holding the interpreter lock, so nothing in the process could
    even notice; a second process can. (Generous: the search itself takes milliseconds.)"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", REPRODUCER, str(tmp_path / "home")], capture_output=True,
                          text=True, env=env, timeout=20)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["None", "0", "1"]


def test_a_heartbeat_keeps_ticking_during_a_worst_case_search(lean: Model) -> None:
    for i in range(3):
        binary_digits(lean.root / "scratch" / "hostile" / f"d{i}.txt", 1_000_000, i)
    (lean.root / "scratch" / "hostile" / "a.txt").write_text(("a" * 24 + "!\n") * 3 + "aaaa\n")
    ticks: list[float] = []
    done = threading.Event()

    def beat() -> None:
        while not done.is_set():
            time.sleep(0.005)
            ticks.append(time.monotonic())

    heart = threading.Thread(target=beat, daemon=True)
    heart.start()
    started = time.monotonic()
    result = lean.ok("search_files", pattern=HOSTILE)
    ended = time.monotonic()
    done.set()
    heart.join()
    assert result.structured["total"] == 1 and result.structured["searchedFiles"] == 4
    during = [t for t in ticks if started <= t <= ended]
    possible = (ended - started) / 0.005
    print(f"ticks {len(during)} of ~{possible:.0f} possible during a {ended - started:.2f} s search")
    assert len(during) >= max(5, 0.2 * possible)


class FindCounter:
    """Counts the RE2 calls of a search (every piece of matching work goes through `grep._find`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from tooldeck.workspace import grep

        self.calls = 0
        real = grep._find

        def counting(*args: Any) -> int:
            self.calls += 1
            return real(*args)

        monkeypatch.setattr(grep, "_find", counting)

    def settled(self) -> int:
        """The count once it stopped moving (fails if it keeps moving for 10 s)."""
        deadline = time.monotonic() + 10
        last = self.calls
        while time.monotonic() < deadline:
            time.sleep(0.3)
            if self.calls == last:
                return last
            last = self.calls
        raise AssertionError("the search kept working after its call ended")


@pytest.fixture
def slow(lean: Model) -> Model:
    for i in range(12):
        binary_digits(lean.root / "scratch" / "slow" / f"f{i:02d}.txt", 1_000_000, 100 + i)
    return lean


def test_the_time_limit_stops_the_work_and_keeps_what_was_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                slow: Model) -> None:
    """The search's own limit ends it with what it found (the dispatch timeout is generous here: how far
    under it the limit sits is checked below; a 1 MB file without newlines is one piece of work, which a
    loaded machine may take longer than the margin to finish)."""
    from tooldeck.workspace import search

    counter = FindCounter(monkeypatch)
    monkeypatch.setattr(search, "MAX_SEARCH_SECONDS", 1.5)
    inv = slow.inv.runtime.invocation(run_id=slow.inv.run_state.run_id,
                                      profile={"tool_timeouts": {"builtin:workspace.search_files": 120.0}})
    [r] = inv.run([{"id": "c", "name": "workspace_search_files", "arguments": {"pattern": HOSTILE}}])
    assert not r.is_error, r.content
    assert "Stopped at the search time limit (1.5 s)" in r.content
    assert r.structured["truncated"] and r.structured["searchedFiles"] < 12
    at_return = counter.calls
    assert counter.settled() - at_return <= 2  # at most the piece in flight


@pytest.mark.parametrize(("dispatch_s", "search_s"), [(2.5, 1.5), (1.0, 0.5), (11.5, 10.0), (120.0, 10.0)])
def test_the_search_limit_sits_under_the_dispatch_timeout(lean: Model, dispatch_s: float, search_s: float) -> None:
    from types import SimpleNamespace

    from tooldeck.builtins.workspace_files import search_seconds
    from tooldeck.core.ids import ToolId

    inv = lean.inv.runtime.invocation(profile={"tool_timeouts": {"builtin:workspace.search_files": dispatch_s}})
    ctx = SimpleNamespace(invocation=inv, tool_id=ToolId.builtin("workspace.search_files"))
    assert search_seconds(ctx) == search_s  # type: ignore[arg-type]


def test_a_dispatch_timeout_stops_the_work(monkeypatch: pytest.MonkeyPatch, slow: Model) -> None:
    from tooldeck.builtins import workspace_files

    counter = FindCounter(monkeypatch)
    monkeypatch.setattr(workspace_files, "search_seconds", lambda _ctx: 1_000.0)  # only dispatch's timeout is left
    inv = slow.inv.runtime.invocation(run_id=slow.inv.run_state.run_id,
                                      profile={"tool_timeouts": {"builtin:workspace.search_files": 1.0}})
    [r] = inv.run([{"id": "c", "name": "workspace_search_files", "arguments": {"pattern": HOSTILE}}])
    assert r.error_code == "tool.timeout"
    at_return = counter.calls
    assert counter.settled() - at_return <= 3


def test_cancelling_the_call_stops_the_work(monkeypatch: pytest.MonkeyPatch, slow: Model) -> None:
    counter = FindCounter(monkeypatch)

    async def scenario() -> None:
        task = asyncio.ensure_future(slow.inv.arun([{"id": "c", "name": "workspace_search_files",
                                                      "arguments": {"pattern": HOSTILE}}]))
        while counter.calls == 0:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    at_cancel = counter.calls
    assert counter.settled() - at_cancel <= 3


@pytest.mark.parametrize(("pattern", "why", "instead"), [
    (r"(a)\1", "backreferences are not supported", "Spell the repeated text out"),
    (r"(?P<w>a)(?P=w)", "backreferences are not supported", "Spell the repeated text out"),
    (r"foo(?=bar)", "look-ahead and look-behind are not supported", "`foo(?=bar)` → `foobar`"),
    (r"(?<!x)y", "look-ahead and look-behind are not supported", "Match the surrounding text"),
    (r"end\Z", "`\\Z` is not supported", "Write `$`"),
    (r"a*+", "possessive quantifiers are not supported", "Drop the extra `+`"),
    (r"(?>ab)", "atomic groups are not supported", "this engine never backtracks"),
    (r"(?x) a b", "verbose mode `(?x)` is not supported", "Remove the `x` flag"),
    (r"a{1001}", "a repeat count can be at most 1000", "smaller count"),
    (r"((a)", "missing )", "Use RE2 syntax"),
    ("a\\", "trailing \\", "Use RE2 syntax"),
])
def test_patterns_re2_cannot_take_say_why_and_what_to_write(model: Model, pattern: str, why: str,
                                                            instead: str) -> None:
    r = model.err("search_files", "workspace.grep_pattern_invalid", pattern=pattern)
    assert why in r.content and instead in r.content, r.content


def test_a_pattern_holding_a_lone_surrogate_is_refused_at_the_gate(model: Model) -> None:
    """No provider sends such a text as UTF-8 JSON: the gate refuses it before the search engine sees it."""
    r = model.err("search_files", "tool.invalid_arguments", pattern="\ud800")
    assert "lone surrogate" in r.content and "`pattern`" in r.content, r.content


def test_what_the_syntax_accepts(model: Model) -> None:
    model.ok("write_file", path="scratch/a.md",
             content="Alpha beta\nbetamax\nΑλφα βήτα\n\nend\ncafé au lait " + "x" * 400 + " NEEDLE\n")
    def lines(pattern: str) -> list[int]:
        return [m["line"] for m in model.ok("search_files", pattern=pattern).structured["matches"]]

    assert lines("(?i)alpha") == [1]
    assert lines(r"\bbeta\b") == [1]
    assert lines(r"^beta") == [2]
    assert lines(r"\p{Greek}+") == [3]
    assert lines("^$") == [4]  # the empty line 4; no phantom line after the final newline
    assert lines("end$") == [5]
    assert lines(r"\Aend\z") == [5]  # matched line by line
    assert lines("") == [1, 2, 3, 4, 5, 6]
    [m] = model.ok("search_files", pattern="NEEDLE").structured["matches"]
    assert m["text"].endswith(" NEEDLE") and m["text"].startswith("…") and len(m["text"]) <= 302


def test_search_json_is_plain(model: Model) -> None:
    model.ok("write_file", path="scratch/a.md", content="hit\n")
    r = model.ok("search_files", pattern="hit")
    json.dumps(r.structured)
