"""Sets of message indexes as Python ints (bit i set = message i), so that a union, an intersection or
a count over 100,000 messages is one C-level operation over 12.5 KB instead of a loop per message.

`levels` are "at least s" sets, s = 1..LEVELS: a capped count per message in unary (thermometer)
form, which adds with saturation by AND/OR alone (`saturating_add`). `planes` turns it into binary
bit planes, which add exactly with AND/XOR (`add_planes`); `top` walks the planes for the best
members, newest first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from itertools import compress, islice, repeat
from operator import eq

LEVELS = 5
"""A term's occurrences in a message count at most this many times (search.TERM_CAP)."""
_SPARSE = 48
"""Up to this many members a set is built by shifts, above it through a byte per message."""


def window(lo: int, hi: int) -> int:
    """Messages lo..hi inclusive."""
    return ((1 << (hi + 1)) - 1) >> lo << lo


def from_ids(ids: Sequence[int], n: int) -> int:
    """The set of `ids` (each in 0..n-1; repeats allowed)."""
    if len(ids) <= _SPARSE:
        out = 0
        for i in ids:
            out |= 1 << i
        return out
    flags = bytearray(-(-n // 8) * 8)
    deque(map(flags.__setitem__, ids, repeat(1)), maxlen=0)
    return _pack(flags)


def _pack(flags: bytes | bytearray) -> int:
    """A byte per message (0 or 1; the length a multiple of 8) → the set."""
    out = 0
    for k in range(8):  # flags[k::8] holds the bits 8j+k: one int per bit position of a byte
        out |= int.from_bytes(flags[k::8], "little") << k
    return out


_AT_LEAST = [bytes(int(b >= s) for b in range(256)) for s in range(LEVELS + 1)]


def counted_levels(ids: Sequence[int], counts: Sequence[int], n: int) -> list[int]:
    """Levels of the counts (1..LEVELS each) of messages `ids`."""
    if len(ids) <= _SPARSE:
        return [from_ids([i for i, c in zip(ids, counts, strict=True) if c >= s], n) for s in range(1, LEVELS + 1)]
    flags = bytearray(-(-n // 8) * 8)
    deque(map(flags.__setitem__, ids, counts), maxlen=0)
    return [_pack(flags.translate(_AT_LEAST[s])) for s in range(1, LEVELS + 1)]


def to_ids(bits: int) -> list[int]:
    """The members, ascending."""
    if bits.bit_count() <= _SPARSE:
        out = []
        while bits:
            low = bits & -bits
            out.append(low.bit_length() - 1)
            bits ^= low
        return out
    if bits.bit_count() * 64 < bits.bit_length():
        return to_ids_sparse(bits)
    size = -(-bits.bit_length() // 8)
    ones = int.from_bytes(b"\x01" * size, "little")
    flags = bytearray(size * 8)
    for k in range(8):
        flags[k::8] = ((bits >> k) & ones).to_bytes(size, "little")
    return list(compress(range(len(flags)), flags))


_ANY = bytes([0] + [1] * 255)
_BITS = [tuple(k for k in range(8) if b >> k & 1) for b in range(256)]


def to_ids_sparse(bits: int) -> list[int]:
    """The members, ascending, in time with how many there are (and a C-level pass over the set's bytes),
    not with its width: for a wide set with few members."""
    data = bits.to_bytes(-(-bits.bit_length() // 8), "little")
    flags = data.translate(_ANY)
    out: list[int] = []
    at = flags.find(1)
    while at >= 0:  # memchr from one nonzero byte to the next
        held = _BITS[data[at]]
        if len(held) == 1:
            out.append(at * 8 + held[0])
        else:
            out.extend(at * 8 + k for k in held)
        at = flags.find(1, at + 1)
    return out


def levels(ids: Sequence[int], n: int) -> list[int]:
    """`ids` ascending, a message once per occurrence → [messages occurring ≥ 1 time, ≥ 2, … ≥ LEVELS]."""
    out = []
    for s in range(1, LEVELS + 1):
        picked = ids if s == 1 else list(compress(ids, map(eq, ids, islice(ids, s - 1, None))))
        if not picked:
            break
        out.append(from_ids(picked, n))
    return out + [0] * (LEVELS - len(out))


def saturating_add(a: list[int], b: list[int]) -> list[int]:
    """Levels of the per-message sum of two level lists, capped at LEVELS."""
    out = []
    for s in range(LEVELS):  # the sum is ≥ s+1 when a is, b is, or a ≥ x+1 and b ≥ s-x
        v = a[s] | b[s]
        for x in range(s):
            if a[x] and b[s - 1 - x]:
                v |= a[x] & b[s - 1 - x]
        out.append(v)
    return out


def scaled(own: list[int], weight: int) -> list[int]:
    """Levels of `weight` × a count (a token holding the term `weight` times), capped."""
    if weight == 1:
        return own
    return [own[-(-s // weight) - 1] for s in range(1, LEVELS + 1)]


def planes(lv: list[int]) -> list[int]:
    """Binary bit planes (lowest first) of a count 0..5 given as levels."""
    one, two, three, four, five = lv
    return [one ^ two ^ three ^ four ^ five, two & ~four, four]


def add_planes(a: list[int], b: list[int]) -> list[int]:
    """Bit planes of the per-message sum (a ripple-carry adder over whole sets)."""
    out = []
    carry = 0
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else 0
        y = b[k] if k < len(b) else 0
        out.append(x ^ y ^ carry)
        carry = (x & y) | (carry & (x ^ y))
    if carry:
        out.append(carry)
    return out


def top(plane: list[int], members: int, limit: int) -> list[tuple[int, int]]:
    """Up to `limit` (score, index) of `members`, best score first, then the highest index."""
    out: list[tuple[int, int]] = []

    def walk(group: int, k: int, score: int) -> None:
        if not group or len(out) >= limit:
            return
        if k < 0:
            while group and len(out) < limit:
                i = group.bit_length() - 1
                out.append((score, i))
                group ^= 1 << i
            return
        walk(group & plane[k], k - 1, score + (1 << k))
        walk(group & ~plane[k], k - 1, score)

    walk(members, len(plane) - 1, 0)
    return out


def union(sets: Iterable[int]) -> int:
    out = 0
    for s in sets:
        out |= s
    return out
