"""The pieces behind the worker processes, checked directly: framing, text repair, parsers, budgets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.shell import protocol
from tooldeck.shell.budget import CANCEL, TIMEOUT, Budget
from tooldeck.shell.commands import _options, sleep_seconds
from tooldeck.shell.limits import ShellLimits
from tooldeck.shell.text import count_lone_surrogates, surrogate_note, well_formed
from tooldeck.shell.vfs import Roots, check_name
from tooldeck.workspace.store import MAX_FILE_BYTES

FRAMES = st.lists(st.tuples(st.integers(0, 255), st.binary(max_size=300)), max_size=20)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(frames=FRAMES, cuts=st.lists(st.integers(0, 4000), max_size=12))
def test_frames_survive_any_split_of_the_stream(frames: list[tuple[int, bytes]], cuts: list[int]) -> None:
    stream = b"".join(protocol.frame(kind, payload) for kind, payload in frames)
    reader = protocol.FrameReader()
    got: list[tuple[int, bytes]] = []
    start = 0
    for cut in sorted({min(c, len(stream)) for c in cuts}):
        got += reader.feed(stream[start:cut])
        start = cut
    got += reader.feed(stream[start:])
    assert got == frames and reader.pending == 0


def test_a_corrupt_length_is_refused() -> None:
    with pytest.raises(protocol.ProtocolError):
        protocol.FrameReader().feed(protocol.HEADER.pack(1, protocol.MAX_FRAME_BYTES + 1))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(value=st.dictionaries(st.text(st.characters(exclude_categories=()), max_size=8),
                             st.text(st.characters(exclude_categories=()), max_size=30), max_size=5))
def test_json_frames_carry_lone_surrogates(value: dict[str, str]) -> None:
    [(kind, payload)] = protocol.FrameReader().feed(protocol.json_frame(protocol.RUN, value))
    assert kind == protocol.RUN and protocol.load(payload) == value


@settings(derandomize=True, max_examples=300, deadline=None)
@given(text=st.text(st.characters(exclude_categories=()), max_size=60))
def test_well_formed_text_always_encodes_and_keeps_everything_else(text: str) -> None:
    fixed = well_formed(text)
    fixed.encode("utf-8")
    assert len(fixed) == len(text)
    assert count_lone_surrogates(fixed) == 0
    assert [a for a, b in zip(text, fixed, strict=True) if a != b] == [c for c in text if "\ud800" <= c <= "\udfff"]
    assert (surrogate_note(text) is None) == (count_lone_surrogates(text) == 0)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(args=st.lists(st.text(max_size=8), max_size=4))
def test_sleep_parses_like_coreutils_or_says_why(args: list[str]) -> None:
    got = sleep_seconds(args)
    assert isinstance(got, float) or (isinstance(got, str) and got.startswith("sleep: "))


def test_sleep_units_add_up() -> None:
    assert sleep_seconds(["1", "0.5s", "2m", ".5"]) == 1 + 0.5 + 120 + 0.5
    assert sleep_seconds(["1h"]) == 3600 and sleep_seconds(["1d"]) == 86400
    assert sleep_seconds(["inf"]) == float("inf")
    assert "invalid time interval '1x'" in str(sleep_seconds(["1x"]))
    assert "missing operand" in str(sleep_seconds([]))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(argv=st.lists(st.text(st.sampled_from("-rfdvRx-p"), max_size=5) | st.text(max_size=5), max_size=6))
def test_rm_options_parse_or_name_the_bad_one(argv: list[str]) -> None:
    short = {"f": "force", "r": "recursive", "R": "recursive", "d": "dir", "v": "verbose"}
    opts = _options(argv, short, {"--force": "force"})
    if opts.error is None:
        assert opts.flags <= set(short.values())
        assert all(a in argv for a in opts.operands)
    else:
        assert "option" in opts.error


def test_options_stop_at_double_dash() -> None:
    opts = _options(["-rf", "--", "-v", "x"], {"r": "r", "f": "f", "v": "v"}, {})
    assert opts.flags == {"r", "f"} and opts.operands == ["-v", "x"]


def test_roots_protect_mount_points_and_their_ancestors_only() -> None:
    roots = Roots(["/output", "/deep/view"])
    assert roots.protected("/") and roots.protected("/output") and roots.protected("/deep")
    assert not roots.protected("/output/x") and not roots.protected("/out") and not roots.protected("/tmp")
    with pytest.raises(OSError, match="cannot be removed"):
        roots.refuse("/output")


@pytest.mark.parametrize(("name", "code"), [("a\0b", "EINVAL"), ("a\udcffb", "EILSEQ"), ("a" * 256, "ENAMETOOLONG"),
                                            ("/x" * 2100, "ENAMETOOLONG")])
def test_check_name_refuses_what_no_filesystem_takes(name: str, code: str) -> None:
    import errno

    with pytest.raises(OSError) as info:
        check_name(name)
    assert errno.errorcode[info.value.errno or 0] == code
    check_name("a" * 255)


def test_the_shell_file_limit_is_the_file_tools_limit() -> None:
    assert ShellLimits().max_file_bytes == MAX_FILE_BYTES
    assert ShellLimits.from_dict({**ShellLimits(timeout_s=3).to_dict(), "unknown": 1}) == ShellLimits(timeout_s=3)


def test_budget_hooks_run_once_and_late_hooks_run_at_once() -> None:
    budget = Budget(10)
    calls: list[str] = []
    unregister = budget.on_stop(lambda: calls.append("a"))
    budget.on_stop(lambda: calls.append("b"))
    unregister()
    budget.stop(CANCEL)
    budget.stop(TIMEOUT)
    assert calls == ["b"] and budget.reason == CANCEL and budget.remaining() == 0
    budget.on_stop(lambda: calls.append("late"))
    assert calls == ["b", "late"]


def test_a_worker_stops_a_call_at_its_deadline_without_the_hosts_stop() -> None:
    """The host may be slow to send STOP (its loop busy): the worker's reader thread keeps the deadline."""
    import os

    from tooldeck.shell.pool import Worker, _worker_argv

    worker = Worker(_worker_argv())
    try:
        # Warm the fresh worker first (its first command builds the interpreter, which on a loaded machine
        # can take longer than the 0.3 s deadline below; that deadline is what this test is about).
        warm = {"id": 6, "command": "true", "workdir": "/", "mounts": [], "notes": [],
                "limits": ShellLimits(timeout_s=30).to_dict(), "timeout": 30, "stream_bytes": [1000, 1000]}
        worker.send(protocol.json_frame(protocol.RUN, warm))
        reader, frames = protocol.FrameReader(), []
        while not any(kind == protocol.DONE for kind, _ in frames):
            frames += reader.feed(os.read(worker.rfd, 1 << 16))
        request = {"id": 7, "command": "echo go; sleep 30; echo never", "workdir": "/", "mounts": [], "notes": [],
                   "limits": ShellLimits(timeout_s=0.3).to_dict(), "timeout": 0.3, "stream_bytes": [1000, 1000]}
        worker.send(protocol.json_frame(protocol.RUN, request))
        reader, frames = protocol.FrameReader(), []
        while not any(kind == protocol.DONE for kind, _ in frames):
            frames += reader.feed(os.read(worker.rfd, 1 << 16))
    finally:
        worker.retire()
    done = protocol.load(next(p for k, p in frames if k == protocol.DONE))
    assert done["status"] == "timed_out" and done["id"] == 7
    # Stopped at the deadline, not after the sleep: the line after it never came.
    assert (protocol.STDOUT, b"go\n") in frames and not any(b"never" in p for _, p in frames)
