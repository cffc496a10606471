"""Agenvoy's file family against the TauriTavern-form tools on the same files, in the same run:

- `read_files` of 20 text files in one call vs 20 `workspace_read_file` calls (one model turn of 20 calls,
  and 20 turns of one call), records off;
- `find_files` over the 3,000-file workspace of `bench.workspace_bench` (same generator, same seed): search
  for `needle-\\d+` and glob `*.md` (every file: a walk plus a stat per file, the first page of 256 paths)
  vs `workspace_search_files` with the same pattern (the existing search bench's measurement).

    python -m bench.agenvoy_files_bench
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import tooldeck
from bench.timing import REPEATS_ALLOWED, expect_ok, report, same_as
from bench.workspace_bench import FILES, PATTERN, _text, interleaved_us

PROFILE = {"builtins": "both", "max_calls_per_invocation": 10_000_000, "result_inline_limit": 1_000_000,
           "max_identical_calls": REPEATS_ALLOWED}
"""Without `max_identical_calls` the guard refused the 4th identical turn: the earlier figures of the 20-call
turn and of read_files timed that refusal."""


def read_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False, profile=PROFILE)
    inv = rt.invocation(run_id="bench-read")
    root = inv.run_state.workspace_root
    rng = random.Random(3)
    paths = [f"scratch/r/f{i:02d}.md" for i in range(20)]
    for p in paths:
        (root / p).parent.mkdir(parents=True, exist_ok=True)
        (root / p).write_text(_text(rng, 4_000))
    batch = [{"id": "b", "name": "read_files", "arguments": {"files": [{"path": p} for p in paths]}}]
    turn = [{"id": f"c{i}", "name": "workspace_read_file", "arguments": {"path": p}} for i, p in enumerate(paths)]
    [res] = inv.run(batch)
    assert not res.is_error and len(res.structured) == 20, res.content[:300]
    assert not any(r.is_error for r in inv.run(turn))

    def one_by_one() -> list[object]:
        return [r for call in turn for r in inv.run([call])]

    print("20 text files of ~4 KB, records off:")
    rows = interleaved_us({"20 workspace_read_file calls in one turn": lambda: inv.run(turn),
                           "20 workspace_read_file turns of one call": one_by_one,
                           "read_files, one call of 20 files": lambda: inv.run(batch)}, 5, 15,
                          dict.fromkeys(("20 workspace_read_file calls in one turn",
                                         "20 workspace_read_file turns of one call",
                                         "read_files, one call of 20 files"), expect_ok))
    report(rows, "20 workspace_read_file calls in one turn")
    rt.close()


def find_bench(home: Path) -> None:
    rt = tooldeck.Runtime(home, records=False, profile=PROFILE)
    inv = rt.invocation(run_id="bench-find")
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
    baseline = [{"id": "s", "name": "workspace_search_files", "arguments": {"pattern": PATTERN}}]
    search = [{"id": "f", "name": "find_files", "arguments": {"queries": [{"pattern": PATTERN,
                                                                          "file_pattern": "**/*"}]}}]
    glob = [{"id": "g", "name": "find_files", "arguments": {"queries": [{"pattern": "*.md"}]}}]
    [a], [b], [c] = inv.run(baseline), inv.run(search), inv.run(glob)
    assert not (a.is_error or b.is_error or c.is_error), (a.content[:200], b.content[:200], c.content[:200])
    assert a.structured["total"] == b.structured["total"] == FILES // 100
    assert b.structured["searchedFiles"] == FILES and c.structured["total"] == FILES
    print(f"{FILES:,} files, through the tools:")
    variants = {f"workspace_search_files `{PATTERN}`": (lambda: inv.run(baseline), a),
                f"find_files search `{PATTERN}`": (lambda: inv.run(search), b),
                "find_files glob `*.md` (all 3,000, newest first)": (lambda: inv.run(glob), c)}
    rows = interleaved_us({name: fn for name, (fn, _) in variants.items()}, 1, 9,
                          {name: same_as(first) for name, (_, first) in variants.items()})
    report(rows, f"workspace_search_files `{PATTERN}`")
    rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        read_bench(Path(tmp) / "read")
        find_bench(Path(tmp) / "find")


if __name__ == "__main__":
    main()
