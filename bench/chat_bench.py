"""Conversation: `chat_search` over 100,000 imported messages (the `scan_limit` cap) against a plain
Python substring scan of the same texts, measured round-robin in the same run. The tool call goes
through the whole pipeline (gate, dispatch on a worker thread, projection, records on); the chat is
loaded once (the source caches it while its revision is unchanged), as in a run that searches
repeatedly.

The messages: 10-40 words each from a 30,000-word vocabulary with Zipf-like frequencies, some with
punctuation attached (so the chat's token index holds ~100,000 distinct tokens, as a long real chat
does). Queries: a rare word (0.2 % of the messages), a common one (10 %), a very common vocabulary
word, a two-word query and a phrase. The baseline is `[i for i, t in enumerate(texts) if q in t]` for
the query's first word or the phrase (case-sensitive, no ranking: less work than the tool does). The
import builds the chat's token index and keeps it in the chat store; the first search of a process
loads it. Those one-time costs are printed too, and the index's load against a rebuild.

    python -m bench.chat_bench
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from itertools import accumulate
from pathlib import Path

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us
from tooldeck.conversation.chat_store import ChatStore
from tooldeck.conversation.index import TokenIndex
from tooldeck.conversation.model import Message

N = 100_000
VOCAB = [f"w{i:05d}" for i in range(30_000)]
CUM_WEIGHTS = list(accumulate(1 / (rank + 1) for rank in range(len(VOCAB))))
"""Cumulative: `choices(VOCAB, weights)` accumulated 30,000 weights per message (minutes for the corpus); the
draws are the same."""
PUNCT = ["", "", "", "", ",", ".", "!", "?"]


def texts(rng: random.Random) -> list[str]:
    out = []
    for i in range(N):
        words = [w + rng.choice(PUNCT) for w in rng.choices(VOCAB, cum_weights=CUM_WEIGHTS, k=rng.randint(10, 40))]
        if i % 500 == 0:
            words.insert(rng.randrange(len(words)), "lighthouse")
        if i % 10 == 3:
            words.insert(rng.randrange(len(words)), "harbour")
        out.append(" ".join(words))
    return out


async def main() -> None:
    rng = random.Random(7)
    corpus = texts(rng)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        store = ChatStore(home / "records.sqlite")
        started = time.perf_counter()
        store.save("big", None, tuple(Message(i, "user" if i % 2 == 0 else "assistant", t)
                                      for i, t in enumerate(corpus)))
        saved = time.perf_counter() - started
        rt = tooldeck.Runtime(home, profile={"allow": ["builtin:chat.search"], "conversation": {"chat": "big"},
                                             "max_calls_per_invocation": 1_000_000,
                                             "max_identical_calls": REPEATS_ALLOWED})
        try:
            inv = rt.invocation(run_id="bench")
            print(f"chat_search over {N:,} messages ({sum(map(len, corpus)) / 1e6:.1f} M characters), "
                  "scan_limit 100,000, limit 20; µs per search, median, round-robin")
            print(f"  import (ChatStore.save, the token index built and kept): {saved:.2f} s")
            for query, needle in (("lighthouse", "lighthouse"), ("harbour", "harbour"), ("w00001", "w00001"),
                                  ("harbour w00003", "harbour"), ('"w00001 w00002"', "w00001 w00002")):
                args = {"query": query, "scan_limit": N}
                started = time.perf_counter()
                [first] = await inv.arun([{"id": "c", "name": "chat_search", "arguments": args}])
                if query == "lighthouse":
                    print(f"  first search (loads the chat and its kept token index): "
                          f"{time.perf_counter() - started:.2f} s")
                    chat = store.load("big")
                    assert chat is not None
                    started = time.perf_counter()
                    store.load_index("big", 1, N)
                    loaded = time.perf_counter() - started
                    started = time.perf_counter()
                    TokenIndex.build(chat.lowered_texts())
                    print(f"  the token index alone: loaded {loaded:.2f} s, built from the lowered texts "
                          f"{time.perf_counter() - started:.2f} s")
                assert not first.is_error, first.content
                matched = first.structured["matched"]

                async def tool(args: dict[str, object] = args) -> object:
                    [result] = await inv.arun([{"id": "c", "name": "chat_search", "arguments": args}])
                    assert not result.is_error, result.content  # a refused call would be timed as a fast one
                    return result

                async def scan(needle: str = needle) -> object:
                    return [i for i, t in enumerate(corpus) if needle in t]

                rows = await ainterleaved_us({"substring scan": scan, "chat_search": tool}, inner=3, repeats=15,
                                             warmup=2)
                base = dict(rows)["substring scan"]
                print(f"\n  query {query!r} ({matched:,} matching messages)")
                for name, value in rows:
                    print(f"    {name:<15} {value / 1000:9.2f} ms   {value / base:5.2f}× substring scan")
        finally:
            rt.close()


if __name__ == "__main__":
    asyncio.run(main())
