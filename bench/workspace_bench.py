"""Workspace file tools against plain Python on the same files, in the same run:

- `workspace_read_file` of a 1 MB file (first page, through `Invocation.run`: gate, dispatch on a
  worker thread, sha256 + read-state, projection) vs `open().read()` + UTF-8 decode of the file; once
  with the file's line/word counts memoised (paging through one file) and once counting them again;
- `workspace_search_files` over a 3,000-file workspace vs a loop that reads every file and runs
  `re.search` on each line.

    python -m bench.workspace_bench
"""

from __future__ import annotations

import os
import random
import re
import string
import tempfile
from pathlib import Path

import tooldeck
from bench.timing import median_us, report
from tooldeck.workspace import reading

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


def read_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False)
    inv = rt.invocation(run_id="bench-read", profile={"max_calls_per_invocation": 1_000_000})
    root = inv.run_state.workspace_root
    path = root / "scratch" / "big.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_text(random.Random(1), 1_000_000))
    call = [{"id": "c1", "name": "workspace_read_file", "arguments": {"path": "scratch/big.txt"}}]
    [first] = inv.run(call)
    assert not first.is_error and first.structured["startLine"] == 1, first.content
    print(f"read_file, 1 MB file ({path.stat().st_size:,} bytes, {first.structured['totalLines']:,} lines; "
          f"first page {first.structured['endLine']} lines):")
    def cold() -> None:
        reading._STATS.clear()  # as if the file had new bytes: lines and words are counted again
        inv.run(call)

    rows = [("plain open().read().decode()", median_us(lambda: _plain_read(path), 20, 9)),
            ("workspace_read_file (tool path)", median_us(lambda: inv.run(call), 20, 9)),
            ("workspace_read_file, first read of these bytes", median_us(cold, 20, 9))]
    report(rows, "plain open().read().decode()")
    rt.close()


def search_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False)
    inv = rt.invocation(run_id="bench-search", profile={"max_calls_per_invocation": 1_000_000})
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
    rows = [("plain os.walk + read + re per line", median_us(lambda: _plain_search(base, rx), 1, 7)),
            ("workspace_search_files (tool path)", median_us(lambda: inv.run(call), 1, 7))]
    report(rows, "plain os.walk + read + re per line")
    common = [{"id": "c1", "name": "workspace_search_files", "arguments": {"pattern": "(?i)the"}}]
    [res] = inv.run(common)
    rx_common = re.compile("(?i)the")
    print(f"search_files, same files, pattern `(?i)the` ({res.structured['total']:,} matching lines):")
    rows = [("plain os.walk + read + re per line", median_us(lambda: _plain_search(base, rx_common), 1, 5)),
            ("workspace_search_files (tool path)", median_us(lambda: inv.run(common), 1, 5))]
    report(rows, "plain os.walk + read + re per line")
    rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        read_bench(Path(tmp) / "read")
        search_bench(Path(tmp) / "search")


if __name__ == "__main__":
    main()
