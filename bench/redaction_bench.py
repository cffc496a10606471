"""What secret redaction (issue 19 item 6) costs per result, against projection without it, in one run.

Results of 1 KiB and 100 KiB of text (a tool's plain `str`, projected inline) through `Projector.project`:

- `none`: no redaction policy (redact = false, or nothing to redact: the default when no secret is known);
- `10 values`: ten known secrets, none in the result (the usual case once a config names secrets);
- `10 values + formats`: the same with `redact_formats = true`;
- `40 values`: forty known secrets (past MANY_VALUES: one RE2 alternation instead of `in` scans);
- `hit`: ten known secrets, one of them in the result (a marker is written);
- `default policy …`: a runtime's policy with nothing known (`redactor` None), without and with the look at
  the secrets store (policy/stored_secrets.py: a clock read, a `stat` at most every 10 ms), nothing stored and
  one secret stored (unchanged since the first look).

    python -m bench.redaction_bench
"""

from __future__ import annotations

import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tooldeck.policy.known_secrets import RedactionPolicy
from tooldeck.policy.stored_secrets import StoredSecrets
from tooldeck.projection import Guidance, Projector
from tooldeck.secrets.filebox import FileBox

SIZES = {"1 KiB": 1024, "100 KiB": 100 * 1024}


def _text(n: int) -> str:
    line = "2026-12-02 01:02:03 INFO worker-7 processed item 48213 in 12.5 ms (status=ok, retries=0)\n"
    return (line * (n // len(line) + 1))[:n]


def _projector(root: Path, values: list[str], formats: bool) -> Projector:
    policy = None
    if values or formats:
        policy = RedactionPolicy(True, formats, (), frozenset())
        policy.rebuild({v: f"SECRET_{i}" for i, v in enumerate(values)})
    return Projector(root, "inv_bench", 10**9, 3_000, Guidance(None, None), policy)


def _watched(root: Path, store: Path) -> Projector:
    """A runtime's default policy with nothing known, looking at the secrets store in `store`."""
    os.environ["TOOLDECK_SECRETS_DIR"] = str(store)
    watch = StoredSecrets(lambda pairs: None)
    watch.sync()  # the first look (and load) happens once per process: not what a result costs
    policy = RedactionPolicy(True, False, (), frozenset(), stored=watch)
    policy.rebuild({})
    return Projector(root, "inv_bench", 10**9, 3_000, Guidance(None, None), policy)


def _median_us(fn: Callable[[], object], inner: int, repeats: int = 15) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(samples)


def main() -> None:
    root = Path(tempfile.mkdtemp())
    ten = [secrets.token_urlsafe(24) for _ in range(10)]
    forty = [secrets.token_urlsafe(24) for _ in range(40)]
    os.environ["TOOLDECK_SECRETS_BACKEND"] = "file"
    stored = root / "stored"
    FileBox(stored).set("BENCH_SECRET", secrets.token_urlsafe(24))
    os.utime(stored, (time.time() - 60, time.time() - 60))  # older than the racy window: trusted
    plain = RedactionPolicy(True, False, (), frozenset())
    plain.rebuild({})
    variants = {
        "none": (_projector(root, [], False), False),
        "default policy, no store look": (Projector(root, "inv_bench", 10**9, 3_000, Guidance(None, None), plain),
                                          False),
        "default policy, nothing stored": (_watched(root, root / "never-stored"), False),
        "default policy, one stored": (_watched(root, stored), False),
        "10 values": (_projector(root, ten, False), False),
        "10 values + formats": (_projector(root, ten, True), False),
        "40 values": (_projector(root, forty, False), False),
        "hit (10 values, one in the text)": (_projector(root, ten, False), True),
    }
    for size_name, size in SIZES.items():
        base_text = _text(size)
        hit_text = base_text[: size // 2] + ten[3] + base_text[size // 2 + len(ten[3]):]
        inner = 2_000 if size <= 1024 else 40
        figures: dict[str, float] = {}
        for name, (projector, hit) in variants.items():
            text = hit_text if hit else base_text
            figures[name] = _median_us(lambda p=projector, t=text: p.project("c1", "extension/x:y", 1, t), inner)
        base = figures["none"]
        print(f"result of {size_name}")
        for name, value in figures.items():
            print(f"  {name:<34} {value:10.2f} µs  {value / base:7.2f}× none  ({value - base:+.2f} µs)")


if __name__ == "__main__":
    main()
