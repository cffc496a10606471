"""Invocation ids (`invocation_ids.py`): the creation time first (the second, then its fraction), 48 random bits
after; unique, ordered by time, and drawn apart in forked children and in processes that seed `random` alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from tooldeck import invocation_ids
from tooldeck.invocation_ids import new_invocation_id

_FORMAT = re.compile(r"inv_[0-9a-f]{8}[0-9a-f]{16}")


def test_an_id_is_the_time_then_random_bits() -> None:
    before = int(time.time())
    inv = new_invocation_id()
    after = int(time.time())
    assert _FORMAT.fullmatch(inv), inv
    assert before <= int(inv[4:12], 16) <= after


def test_ids_are_unique() -> None:
    ids = [new_invocation_id() for _ in range(50_000)]
    assert len(set(ids)) == len(ids)


def test_ids_of_a_later_second_sort_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """What keeps a group commit's new keys on the right-most leaves of the records' B-trees."""
    now = [1_790_000_000.5]
    monkeypatch.setattr(invocation_ids.time, "time", lambda: now[0])
    first = [new_invocation_id() for _ in range(200)]
    now[0] += 1
    later = [new_invocation_id() for _ in range(200)]
    assert max(first) < min(later)


def test_ids_made_one_after_another_sort_in_the_order_they_were_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within one second too (a served call every millisecond): one group commit's ids share the right-most
    leaves. Fails with the second alone first (the random bits then order the ids of one second)."""
    now = [1_790_000_000.0]
    monkeypatch.setattr(invocation_ids.time, "time", lambda: now[0])
    made = []
    for _ in range(500):
        made.append(new_invocation_id())
        now[0] += 0.001
    assert made == sorted(made)
    assert len({i[4:12] for i in made}) == 1  # all within one second


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, " ".join(new_invocation_id() for _ in range(5)).encode())
        finally:
            os._exit(0)
    os.close(write)
    ours = {new_invocation_id() for _ in range(5)}
    with os.fdopen(read, "rb") as pipe:
        theirs = set(pipe.read().decode().split())
    os.waitpid(pid, 0)
    assert len(theirs) == 5
    assert {i[16:] for i in ours}.isdisjoint(i[16:] for i in theirs)


def test_seeding_random_alike_does_not_make_processes_draw_alike() -> None:
    code = ("import random; random.seed(0); from tooldeck.invocation_ids import new_invocation_id; "
            "print(new_invocation_id()[16:])")
    drawn = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
             for _ in range(2)}
    assert len(drawn) == 2
