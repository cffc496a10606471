"""Invocation ids: `inv_` + the creation second (8 hex digits) + 64 random bits (16 hex digits).

The records store keys four B-trees by invocation id (the `invocations` primary key, `owner_invocations`,
`events_invocation`, `turns_round`). A random id lands each new invocation on a random leaf of each: a
group commit of n invocations writes up to 4·n leaf pages to the WAL, and random splits leave the leaves
half full. With the second first, the ids of one group commit sort after every older id, so they share the
right-most leaves (SQLite's append path keeps those full). The 64 random bits keep ids from two processes,
or two calls in one second, apart as before (uuid4's first 16 hex digits held 60).

The bits come from a private `random.Random` seeded from `os.urandom` at import and again in a forked child:
no system call per id (uuid4 reads `getrandom` each time), and a host's `random.seed(...)` cannot make two
processes draw the same ids. Ids are names, not secrets: nothing is authorised by knowing one.
"""

from __future__ import annotations

import os
import random
import time

_RANDOM = random.Random(os.urandom(32))


def _reseed() -> None:
    _RANDOM.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def new_invocation_id() -> str:
    """A new invocation id; ids made in a later second sort after those of an earlier one."""
    return f"inv_{int(time.time()) & 0xFFFF_FFFF:08x}{_RANDOM.getrandbits(64):016x}"


__all__ = ["new_invocation_id"]
