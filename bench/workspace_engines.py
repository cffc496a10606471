"""Regular-expression engines for `workspace_search_files`, compared on the search bench's 3,000 files.

For each engine that is importable here: the search of the 3,000-file workspace done the way the tool
would do it with that engine (walk, read, whole-file test or search, then lines), against the naive
loop (`os.walk` + read + `re.search` per line) in the same run; the worst case `^(a+)+$` over a
30-character line (in a child process that is killed after 10 s, since a backtracking engine holds
the interpreter lock and cannot be stopped from inside); and how often a heartbeat thread ticks
during a slow search (1 MB of random 0/1 text, `1[01]{25}2`), which shows whether the engine releases
the interpreter lock.

    python -m bench.workspace_engines [folder of a 3,000-file workspace]

Alternatives are not dependencies: install them into the bench's environment to see them
(`pip install flpc regex`). pyre2 also installs a module named `re2`; point `PYRE2_SITE` at a
site-packages folder holding it (a separate venv) to load it beside google-re2.
"""

from __future__ import annotations

import importlib
import os
import random
import re
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Counter = Callable[[bytes], int]
"""Matching lines in one file's bytes."""


def _lines(text: str) -> list[str]:
    return text.split("\n")


def stdlib_re(pattern: str) -> Counter:
    """What the tool did before: a whole-file test in C, then Python `re` on each line of candidate files."""
    line, whole = re.compile(pattern), re.compile(pattern, re.MULTILINE)

    def count(data: bytes) -> int:
        text = data.decode("utf-8")
        if whole.search(text) is None:
            return 0
        return sum(1 for x in _lines(text) if line.search(x))
    return count


def google_re2(pattern: str) -> Counter:
    """The tool now (`tooldeck.workspace.grep`): one RE2 search per matching line over the bytes."""
    from tooldeck.workspace.grep import Stop, compile_pattern, matching_lines

    compiled = compile_pattern(pattern)
    stop = Stop(3600)  # the tool makes one per search

    def count(data: bytes) -> int:
        if not data.isascii():
            data.decode("utf-8")
        return sum(1 for _ in matching_lines(compiled, data, stop))
    return count


def google_re2_per_line(pattern: str) -> Counter:
    import re2

    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    line = re2.compile(pattern.encode(), options)
    return lambda data: sum(1 for x in data.split(b"\n") if line.search(x) is not None)


def pyre2(pattern: str) -> Counter | None:
    module = _load_pyre2()
    if module is None:
        return None
    module.set_fallback_notification(module.FALLBACK_EXCEPTION)  # never fall back to `re` silently
    line, whole = module.compile(pattern.encode()), module.compile(b"(?m)" + pattern.encode())

    def count(data: bytes) -> int:
        if whole.search(data) is None:
            return 0
        return sum(1 for x in data.split(b"\n") if line.search(x) is not None)
    return count


def flpc(pattern: str) -> Counter | None:
    try:
        module = importlib.import_module("flpc")
    except ImportError:
        return None
    line, whole = module.compile(pattern), module.compile("(?m)" + pattern)

    def count(data: bytes) -> int:
        text = data.decode("utf-8")
        if module.search(whole, text) is None:
            return 0
        return sum(1 for x in _lines(text) if module.search(line, x) is not None)
    return count


def mrab_regex(pattern: str) -> Counter | None:
    try:
        module = importlib.import_module("regex")
    except ImportError:
        return None
    line, whole = module.compile(pattern), module.compile(pattern, module.MULTILINE)

    def count(data: bytes) -> int:
        text = data.decode("utf-8")
        if whole.search(text, concurrent=True, timeout=60) is None:
            return 0
        return sum(1 for x in _lines(text) if line.search(x, concurrent=True))
    return count


ENGINES: dict[str, Callable[[str], Counter | None]] = {
    "re (stdlib; the tool before)": stdlib_re,
    "google-re2 1.1 (chosen)": google_re2,
    "google-re2, naive per line": google_re2_per_line,
    "pyre2 (Cython RE2)": pyre2,
    "flpc (Rust regex)": flpc,
    "regex (mrab, backtracking)": mrab_regex,
}


def _load_pyre2() -> Any:
    site = os.environ.get("PYRE2_SITE")
    if not site:
        return None
    saved = sys.modules.pop("re2", None)
    sys.path.insert(0, site)
    try:
        module = importlib.import_module("re2")
    except ImportError:
        module = None
    finally:
        sys.path.remove(site)
        sys.modules.pop("re2", None)
        if saved is not None:
            sys.modules["re2"] = saved
    return module if hasattr(module, "set_fallback_notification") else None


def walk_count(root: Path, count: Counter) -> int:
    hits = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(dirpath, name), "rb") as f:
                hits += count(f.read())
    return hits


def naive(root: Path, pattern: str) -> int:
    rx = re.compile(pattern)
    return walk_count(root, lambda data: sum(1 for x in _lines(data.decode("utf-8")) if rx.search(x)))


WORST = textwrap.dedent('''
    import sys, time
    sys.path[:0] = sys.argv[3:]
    from bench.workspace_engines import ENGINES
    make = ENGINES[sys.argv[1]]
    count = make(sys.argv[2])
    data = ("a" * 29 + "!\\n").encode()
    started = time.perf_counter()
    for _ in range(100):
        count(data)
    print((time.perf_counter() - started) / 100 * 1e6)
''')


def worst_case_us(name: str) -> str:
    try:
        proc = subprocess.run([sys.executable, "-c", WORST, name, "^(a+)+$", *sys.path], capture_output=True,
                              text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return "> 10 s (killed)"
    return f"{float(proc.stdout.strip()):.1f} µs" if proc.returncode == 0 else "error"


def heartbeat(count: Counter) -> str:
    data = random.Random(7).randbytes(1_000_000).translate(bytes(0x30 + (b & 1) for b in range(256)))
    ticks = 0
    done = threading.Event()

    def beat() -> None:
        nonlocal ticks
        while not done.is_set():
            time.sleep(0.001)
            ticks += 1

    thread = threading.Thread(target=beat)
    thread.start()
    time.sleep(0.05)
    before, started = ticks, time.perf_counter()
    count(data)
    took = time.perf_counter() - started
    got = ticks - before
    done.set()
    thread.join()
    return f"{got} ticks in {took * 1000:.0f} ms"


def interleaved_ms(variants: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median ms of each variant, measured round-robin so that load on the shared machine falls on all alike."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            started = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def compare(root: Path, patterns: list[str], repeats: int = 7) -> None:
    for pattern in patterns:
        expected = naive(root, pattern)
        variants: dict[str, Callable[[], object]] = {"naive os.walk + re per line": lambda p=pattern: naive(root, p)}
        missing = []
        for name, make in ENGINES.items():
            count = make(pattern)
            if count is None:
                missing.append(name)
                continue
            hits = walk_count(root, count)
            assert hits == expected, (name, hits, expected)
            variants[name] = lambda c=count: walk_count(root, c)
        print(f"3,000-file search, pattern `{pattern}` ({expected} matching lines), median ms of {repeats} "
              "interleaved runs, × the naive loop:")
        times = interleaved_ms(variants, repeats)
        base = times["naive os.walk + re per line"]
        for name, ms in times.items():
            print(f"  {name:<32} {ms:8.1f} ms   {ms / base:.2f}×")
        for name in missing:
            print(f"  {name:<32} (not installed)")
    print("worst case `^(a+)+$` over `a`×29 + `!` (per search), and heartbeat ticks (1 ms sleeps) during a slow "
          "search (1 MB of 0/1, `1[01]{25}2`):")
    for name, make in ENGINES.items():
        count = make("1[01]{25}2")
        if count is None:
            continue
        print(f"  {name:<32} worst {worst_case_us(name):>16}   heartbeat {heartbeat(count)}")


def make_corpus(root: Path) -> None:
    from bench.workspace_bench import FILES, _text

    rng = random.Random(2)
    for i in range(FILES):
        d = root / f"d{i % 30:02d}" / f"e{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        text = _text(rng, rng.randint(500, 4_000))
        if i % 100 == 0:
            text += f"here is a needle-{i}\n"
        (d / f"f{i:04d}.md").write_text(text)


def main() -> None:
    import tempfile

    if len(sys.argv) > 1:
        compare(Path(sys.argv[1]), [r"needle-\d+", "(?i)the"])
        return
    with tempfile.TemporaryDirectory() as tmp:
        make_corpus(Path(tmp))
        compare(Path(tmp), [r"needle-\d+", "(?i)the"])


if __name__ == "__main__":
    main()
