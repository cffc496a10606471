"""World-info activation (once per session, not per call): a 2,000-entry book over 20 messages, by
the first scan alone (`recursion=0`), with recursive scanning (3 passes; and with the recursion fast
path off, every pass rescanning its whole text), and with recursion, a budget, probability and
inclusion groups, against a plain Python scan of the same keys over the
same text (`any(k in text for k in keys)` per entry: no secondary keys, no ordering), measured
round-robin in the same run.

The book: each entry has two primary keys from a 3,000-word vocabulary and a 30-word content that
names two other entries' keys (so recursion chains through the book); a tenth have secondary keys,
a fifth a probability, a tenth a group. The messages: 40 vocabulary words each.

    python -m bench.worldinfo_bench
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

from tooldeck.conversation.model import Message
from tooldeck.conversation.worldinfo import activate, parse_book

ENTRIES = 2_000
VOCAB = [f"word{i:04d}" for i in range(3_000)]


def book(rng: random.Random) -> dict[str, object]:
    keys = [[VOCAB[(2 * i) % len(VOCAB)], VOCAB[(2 * i + 1) % len(VOCAB)] + "x"] for i in range(ENTRIES)]
    entries: dict[str, object] = {}
    for i in range(ENTRIES):
        words = [*rng.choices(VOCAB, k=28), keys[rng.randrange(ENTRIES)][0], keys[rng.randrange(ENTRIES)][0]]
        entry: dict[str, object] = {"uid": i, "key": keys[i], "content": " ".join(words), "order": rng.randint(0, 500)}
        if i % 10 == 0:
            entry |= {"keysecondary": rng.choices(VOCAB, k=2), "selectiveLogic": i % 4}
        if i % 5 == 1:
            entry |= {"probability": 50}
        if i % 10 == 2:
            entry |= {"group": f"g{i % 7}", "groupWeight": rng.randint(1, 100)}
        entries[str(i)] = entry
    return {"entries": entries}


def median_ms(fn: Callable[[], object], repeats: int = 9) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main() -> None:
    rng = random.Random(11)
    parsed = parse_book("bench", book(rng))
    messages = [Message(i, "user", " ".join(rng.choices(VOCAB, k=40))) for i in range(20)]
    text = "\n".join(m.text for m in messages).lower()
    plain_keys = [[k.text for k in e.keys] for e in parsed.entries]

    cases: list[tuple[str, Callable[[], object]]] = [
        ("plain key scan", lambda: [i for i, keys in enumerate(plain_keys) if any(k in text for k in keys)]),
        ("first scan only", lambda: activate([parsed], messages, 20, recursion=0, seed="r")),
        ("recursion 3", lambda: activate([parsed], messages, 20, recursion=3, seed="r")),
        ("recursion 3, full rescans", lambda: activate([parsed], messages, 20, recursion=3, seed="r",
                                                       incremental=False)),
        ("recursion 3 + budget 4000", lambda: activate([parsed], messages, 20, recursion=3, budget=4000, seed="r")),
    ]
    sizes = {name: sum(1 for a in fn() if getattr(a, "skipped", None) is None) if name != "plain key scan"
             else len(fn()) for name, fn in cases}  # type: ignore[arg-type]
    totals: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(3):  # round-robin
        for name, fn in cases:
            totals[name].append(median_ms(fn))
    base = statistics.median(totals["plain key scan"])
    print(f"world-info activation: {ENTRIES:,} entries, 20 messages; ms per activation, median, round-robin")
    for name, _ in cases:
        value = statistics.median(totals[name])
        print(f"  {name:<27} {value:9.2f} ms  {value / base:6.2f}× plain key scan   ({sizes[name]} active)")


if __name__ == "__main__":
    main()
