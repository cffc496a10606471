"""Snapshot reuse (issue 13.2) at 10 / 1,000 / 5,000 tools, deferred and eager loading, records off.

Each figure is a median, and each is printed against the same step measured in the same run when
the snapshot cannot be reused (a tool registered between invocations, so every invocation builds
its snapshot, gate table and search index again: what every invocation paid before reuse):

- `rt.invocation()` when nothing changed vs after a change;
- the first `find_tools(query=...)` of an invocation (deferred; the search index is per snapshot);
- `inv.tools()` (the snapshot's own array) vs the deep copy it used to return (eager: every schema).

    python -m bench.snapshot_bench
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

import tooldeck
from bench.timing import REPEATS_ALLOWED, expect_ok

SIZES = ((10, 41), (1_000, 9), (5_000, 5))
VERBS = ("get", "list", "create", "delete", "update", "search", "convert", "book", "send", "compute")
NOUNS = ("weather", "invoice", "hotel", "flight", "stock", "recipe", "ticket", "playlist", "calendar", "currency",
         "contact", "package", "review", "payment", "sensor", "report", "message", "account", "image", "route")
QUERY = {"id": "q", "name": "find_tools", "arguments": {"query": "convert currency for a payment"}}


def build(home: Path, n: int, loading: str) -> tooldeck.Runtime:
    rt = tooldeck.Runtime(home, builtins=[], records=False, profile={"allow": ["extension/*"], "loading": loading,
                          "max_identical_calls": REPEATS_ALLOWED})
    for i in range(n):
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS)) % len(NOUNS)]
        schema = {"type": "object", "properties": {
            "id": {"type": "string", "description": f"The {noun}'s id."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many at most."},
            "note": {"type": "string", "description": f"Why you {verb} it."}}, "required": ["id"]}
        rt.extensions.register(lambda **kw: "ok", "gen", f"{verb}_{noun}_{i}", input_schema=schema, blocking=False,
                               description=f"{verb.capitalize()} a {noun} by id (variant {i}); returns the {noun}.")
    return rt


def median_ms(step: Callable[[], Callable[[], object]], repeats: int) -> float:
    """`step()` prepares (untimed) and returns the timed part."""
    samples = []
    for _ in range(repeats):
        timed = step()
        start = time.perf_counter()
        out = timed()
        samples.append((time.perf_counter() - start) * 1e3)
        expect_ok(out)  # a find_tools call that was refused or failed is not the work timed
    return statistics.median(samples)


def measure(home: Path, n: int, repeats: int, loading: str) -> None:
    rt = build(home, n, loading)
    deferred = loading == "deferred"
    churn = [0]

    def change() -> None:  # a new tool each time: the catalog never comes back to an earlier state
        if churn[0]:
            rt.extensions.unregister(f"extension/gen:churn_{churn[0]}")
        churn[0] += 1
        rt.extensions.register(lambda: "ok", "gen", f"churn_{churn[0]}", description="Churn.", blocking=False)

    if deferred:
        rt.invocation(run_id="r").run([QUERY])  # warm: the unchanged catalog's snapshot and index exist
    else:
        rt.invocation(run_id="r")
    same = median_ms(lambda: lambda: rt.invocation(run_id="r"), repeats)

    def changed() -> Callable[[], object]:
        change()
        return lambda: rt.invocation(run_id="r")

    rebuilt = median_ms(changed, repeats)
    print(f"  {n:>5} tools  {loading:<8}  rt.invocation()  {same:8.3f} ms  vs {rebuilt:8.3f} ms rebuilt  "
          f"{same / rebuilt:6.3f}×")
    if deferred:
        find(rt, repeats, change)
    else:
        inv = rt.invocation(run_id="r")
        shared = median_ms(lambda: inv.tools, repeats * 20)
        copied = median_ms(lambda: lambda: orjson.loads(orjson.dumps(list(inv.snapshot.tools))), repeats)
        print(f"  {'':>5}        {'':<8}  inv.tools()      {shared:8.4f} ms  vs {copied:8.3f} ms copied   "
              f"{shared / copied:6.4f}×")
    rt.close()


def find(rt: tooldeck.Runtime, repeats: int, change: Callable[[], None]) -> None:
    rt.invocation(run_id="r").run([QUERY])

    def find_same() -> Callable[[], object]:
        inv = rt.invocation(run_id="r")
        return lambda: inv.run([QUERY])

    def find_changed() -> Callable[[], object]:
        change()
        inv = rt.invocation(run_id="r")
        return lambda: inv.run([QUERY])

    find_reused = median_ms(find_same, repeats)
    find_rebuilt = median_ms(find_changed, repeats)
    print(f"  {'':>5}        {'':<8}  first find_tools {find_reused:8.3f} ms  vs {find_rebuilt:8.3f} ms rebuilt  "
          f"{find_reused / find_rebuilt:6.3f}×")


def main() -> None:
    print("Snapshot reuse, records off (median ms; × the same step when the catalog changed, same run):")
    with tempfile.TemporaryDirectory() as tmp:
        for n, repeats in SIZES:
            for loading in ("deferred", "eager"):
                measure(Path(tmp) / f"{loading}{n}", n, repeats, loading)


if __name__ == "__main__":
    main()
