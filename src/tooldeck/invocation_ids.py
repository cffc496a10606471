"""Invocation ids: `inv_` + the creation time in 1/65536 s (8 hex digits of the second, then 4 of the fraction) +
48 random bits (12 hex digits).

The records store keys four B-trees by invocation id (the `invocations` primary key, `owner_invocations`,
`events_invocation`, `turns_round`). A random id lands each new invocation on a random leaf of each: a
group commit of n invocations writes up to 4·n leaf pages to the WAL, and random splits leave the leaves
half full. With the time first, the ids of one group commit sort after every older id (unless two come within
the same 15 µs), so they share the right-most leaves (SQLite's append path keeps those full). The second alone
was too coarse: `tooldeck serve` makes hundreds of ids a second, and a random order within it spread one commit
over several leaves of each index. The 48 random bits keep ids from two processes, or two ids of one tick, apart.

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
    """A new invocation id; ids made in a later 1/65536 s sort after those of an earlier one."""
    tick = int(time.time() * 65536)
    return f"inv_{(tick >> 16) & 0xFFFF_FFFF:08x}{tick & 0xFFFF:04x}{_RANDOM.getrandbits(48):012x}"


__all__ = ["new_invocation_id"]
