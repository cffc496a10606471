"""`process_group.spawn` (host commands and executable hooks): a program cancelled while asyncio is still
setting it up is stopped with everything it started, not only its leader; a program that cannot start is the
OSError; a started one runs in a group of its own."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.processes import gone as _gone
from tooldeck.process_group import kill_group, spawn

TICKER = "echo $$ > pid; (while true; do echo t >> tick; sleep 0.05; done) & echo $! > child; wait"


def _stops_changing(path: Path) -> bool:
    before = path.stat().st_size
    time.sleep(0.5)
    return path.stat().st_size == before


def test_cancelled_during_set_up_the_whole_group_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from asyncio import base_subprocess

    connect = base_subprocess.BaseSubprocessTransport._connect_pipes

    async def slow_connect(self: Any, waiter: Any) -> None:
        await asyncio.sleep(1.0)
        await connect(self, waiter)

    monkeypatch.setattr(base_subprocess.BaseSubprocessTransport, "_connect_pipes", slow_connect)

    async def go() -> None:
        task = asyncio.ensure_future(spawn("sh", "-c", TICKER, cwd=tmp_path, stdout=asyncio.subprocess.PIPE))
        end = time.monotonic() + 20
        while not (tmp_path / "child").exists() and time.monotonic() < end:
            await asyncio.sleep(0.01)
        assert not task.done()  # still in the set-up
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert _gone(int((tmp_path / "child").read_text())) and _gone(int((tmp_path / "pid").read_text()))
    assert _stops_changing(tmp_path / "tick")


def test_a_program_that_cannot_start_is_the_oserror_and_a_started_one_leads_its_group(tmp_path: Path) -> None:
    async def go() -> None:
        with pytest.raises(FileNotFoundError):
            await spawn(str(tmp_path / "missing"))
        proc = await spawn("sleep", "30")
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        kill_group(proc.pid)
        assert await proc.wait() == -signal.SIGKILL

    asyncio.run(go())
