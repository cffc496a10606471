"""Workspace file tools against plain Python on the same files, in the same run:

- `workspace_read_file` of a 1 MB file (first page, through `Invocation.run`: gate, dispatch on a
  worker thread, sha256 + read-state, projection) vs `open().read()` + UTF-8 decode of the file; once
  with the file's line/word counts memoised (paging through one file) and once counting them again;
- `workspace_search_files` over a 3,000-file workspace vs a loop that reads every file and runs
  `re.search` on each line (the engines compared on the same files: `bench.workspace_engines`);
- the worst case `^(a+)+$` over a file of one 30-character line vs `needle` over the same file, both
  through the tool;
- the cost of one write (`WorkspaceStore.swap`, and `workspace_write_file` through the pipeline) with
  the cross-process lock vs the in-process lock alone (what tooldeck had before).

    python -m bench.workspace_bench
"""

from __future__ import annotations

import os
import random
import re
import statistics
import string
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tooldeck
from bench.timing import REPEATS_ALLOWED, Check, median_us, report, same_as
from tooldeck.workspace import for_run, reading

FILES = 3_000
PATTERN = r"needle-\d+"


def _text(rng: random.Random, chars: int) -> str:
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(500)]
    out: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out) + "\n"


def _plain_read(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def _plain_search(root: Path, rx: re.Pattern[str]) -> int:
    hits = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                text = f.read().decode("utf-8")
            for line in text.split("\n"):
                if rx.search(line):
                    hits += 1
    return hits


BENCH_INV = {"max_calls_per_invocation": 1_000_000, "max_identical_calls": REPEATS_ALLOWED}
"""An invocation's profile replaces the Runtime's: without `max_identical_calls` here the guard refuses the 4th
identical call, and a bench timed the refusal (earlier figures of this file did)."""


def read_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-read", profile=BENCH_INV)
    root = inv.run_state.workspace_root
    path = root / "scratch" / "big.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_text(random.Random(1), 1_000_000))
    call = [{"id": "c1", "name": "workspace_read_file", "arguments": {"path": "scratch/big.txt"}}]
    [first] = inv.run(call)
    assert not first.is_error and first.structured["startLine"] == 1, first.content
    print(f"read_file, 1 MB file ({path.stat().st_size:,} bytes, {first.structured['totalLines']:,} lines; "
          f"first page {first.structured['endLine']} lines):")
    def cold() -> object:
        reading._STATS.clear()  # as if the file had new bytes: lines and words are counted again
        return inv.run(call)

    rows = [("plain open().read().decode()", median_us(lambda: _plain_read(path), 20, 9)),
            ("workspace_read_file (tool path)", median_us(lambda: inv.run(call), 20, 9, check=same_as(first))),
            ("workspace_read_file, first read of these bytes", median_us(cold, 20, 9, check=same_as(first)))]
    report(rows, "plain open().read().decode()")
    rt.close()


def search_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-search", profile=BENCH_INV)
    root = inv.run_state.workspace_root
    rng = random.Random(2)
    base = root / "scratch"
    for i in range(FILES):
        d = base / f"d{i % 30:02d}" / f"e{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        text = _text(rng, rng.randint(500, 4_000))
        if i % 100 == 0:
            text += f"here is a needle-{i}\n"
        (d / f"f{i:04d}.md").write_text(text)
    rx = re.compile(PATTERN)
    expected = _plain_search(base, rx)
    call = [{"id": "c1", "name": "workspace_search_files", "arguments": {"pattern": PATTERN}}]
    [res] = inv.run(call)
    assert not res.is_error and res.structured["total"] == expected, (res.content[:300], expected)
    assert res.structured["searchedFiles"] == FILES
    size = sum(p.stat().st_size for p in base.rglob("*.md"))
    print(f"search_files, {FILES:,} files ({size / 1e6:.1f} MB), pattern `{PATTERN}`, {expected} hits:")
    rows = interleaved_us({"plain os.walk + read + re per line": lambda: _plain_search(base, rx),
                           "workspace_search_files (tool path)": lambda: inv.run(call)}, 1, 9,
                          {"workspace_search_files (tool path)": same_as(res)})
    report(rows, "plain os.walk + read + re per line")
    common = [{"id": "c1", "name": "workspace_search_files", "arguments": {"pattern": "(?i)the"}}]
    [res] = inv.run(common)
    rx_common = re.compile("(?i)the")
    print(f"search_files, same files, pattern `(?i)the` ({res.structured['total']:,} matching lines):")
    rows = interleaved_us({"plain os.walk + read + re per line": lambda: _plain_search(base, rx_common),
                           "workspace_search_files (tool path)": lambda: inv.run(common)}, 1, 7,
                          {"workspace_search_files (tool path)": same_as(res)})
    report(rows, "plain os.walk + read + re per line")
    rt.close()


def interleaved_us(variants: dict[str, Callable[[], object]], inner: int, repeats: int,
                   checks: dict[str, Check] | None = None) -> list[tuple[str, float]]:
    """Median µs per call of each variant, batches measured round-robin (load falls on all alike). `checks`:
    per variant, a check of the last value of each batch, outside the clock."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    checks = checks or {}
    for _ in range(repeats):
        for name, fn in variants.items():
            started = time.perf_counter()
            for _ in range(inner):
                out = fn()
            samples[name].append((time.perf_counter() - started) / inner * 1e6)
            if name in checks:
                checks[name](out)
    return [(name, statistics.median(values)) for name, values in samples.items()]


def worst_case_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-worst", profile=BENCH_INV)
    path = inv.run_state.workspace_root / "scratch" / "w.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a" * 29 + "!\n")
    worst = [{"id": "c1", "name": "workspace_search_files", "arguments": {"pattern": "^(a+)+$", "path": "scratch"}}]
    needle = [{"id": "c1", "name": "workspace_search_files", "arguments": {"pattern": "needle", "path": "scratch"}}]
    firsts = []
    for call in (worst, needle):
        [res] = inv.run(call)
        assert not res.is_error and res.structured["total"] == 0, res.content
        firsts.append(res)
    print("search_files, one file of one 30-character line (`a`×29 + `!`), through the tool:")
    report(interleaved_us({"`needle`": lambda: inv.run(needle), "`^(a+)+$` (the worst case)": lambda: inv.run(worst)},
                          50, 15, {"`needle`": same_as(firsts[1]), "`^(a+)+$` (the worst case)": same_as(firsts[0])}),
           "`needle`")
    rt.close()


def cas_bench(home: Path) -> None:
    """One write of a 1 KB file: the store's compare-and-swap, and write_file through the whole pipeline."""
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-cas", profile={**BENCH_INV, "max_calls_per_invocation": 10_000_000})
    store = for_run(inv.run_state)
    policy = store.policy(inv.profile.workspace)
    loc = store.locate(policy, "scratch/cas.md")
    body = b"x" * 1024
    store.swap(loc, None, lambda _old: body)

    def swap() -> None:
        store.swap(loc, store.current_sha(loc), lambda _old: body)

    def both(fn: Callable[[], object]) -> tuple[Callable[[], object], Callable[[], object]]:
        def cross() -> object:
            store.locks.cross_process = True
            return fn()

        def local() -> object:
            store.locks.cross_process = False
            return fn()
        return local, cross

    # replacing a file this run wrote needs no new read: its read-state follows its own writes
    args = {"path": "scratch/tool.md", "content": "x" * 1024}
    call = [{"id": "c1", "name": "workspace_write_file", "arguments": args}]
    [res] = inv.run(call)
    assert not res.is_error, res.content
    def hold() -> None:
        with store.locks.hold(loc.real_rel):
            pass

    hold_local, hold_cross = both(hold)
    print("the lock alone (take and release), in-process lock only (before) vs + the cross-process flock (now):")
    report(interleaved_us({"in-process lock (before)": hold_local, "+ cross-process lock (now)": hold_cross},
                          1_000, 15), "in-process lock (before)")
    swap_local, swap_cross = both(swap)
    tool_local, tool_cross = both(lambda: inv.run(call))
    print("one 1 KB write (a replace: the old bytes read, compared, kept as a version, the new renamed in), "
          "in-process lock only (before) vs + the cross-process flock (now):")
    rows = interleaved_us({"store.swap, in-process lock (before)": swap_local,
                           "store.swap, + cross-process lock (now)": swap_cross}, 100, 15)
    report(rows, "store.swap, in-process lock (before)")
    rows = interleaved_us({"write_file, in-process lock (before)": tool_local,
                           "write_file, + cross-process lock (now)": tool_cross}, 100, 15,
                          {"write_file, in-process lock (before)": same_as(res),
                           "write_file, + cross-process lock (now)": same_as(res)})
    report(rows, "write_file, in-process lock (before)")
    store.locks.cross_process = True
    rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        read_bench(Path(tmp) / "read")
        search_bench(Path(tmp) / "search")
        worst_case_bench(Path(tmp) / "worst")
        cas_bench(Path(tmp) / "cas")


if __name__ == "__main__":
    main()
