"""The sandboxed shell against the host shell, in the same run:

- `echo hi`, `python3 -c 'print(1)'` and `node -e 'console.log(1)'` through the whole pipeline
  (`Invocation.run` → gate → dispatch → a shell worker process running a fresh bashkit interpreter
  with the workspace mounted → projection) vs `subprocess.run(["bash", "-c", "echo hi"])`;
- `grep -rn` over a 3,000-file workspace through the tool vs host `grep -rn` on the same folder, plus
  the alternative layout considered (the same files preloaded into bashkit's in-memory VFS);
- how long after its deadline a timed-out call returns, for loops in bash, python3 and js and for a
  QuickJS native operation that ignores its time limit (the worker is killed).

    python -m bench.shell_bench
    python -m bench.shell_bench --baseline-src DIR   # the per-call rows against another checkout's src/,
                                                     # each side in its own process, calls interleaved
    git archive <commit> src | tar -x -C /tmp/base && python -m bench.shell_bench --baseline-src /tmp/base/src
"""

from __future__ import annotations

import json
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tooldeck
from bench.timing import REPEATS_ALLOWED, Check, same_as

FILES = 3_000
DIRS = 30


def _words(rng: random.Random) -> list[str]:
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(400)]


def make_tree(root: Path, seed: int = 7) -> dict[str, str]:
    """3,000 small text files (~1 KB) in 30 folders; about 1 in 10 holds `needle-<n>`."""
    rng = random.Random(seed)
    words = _words(rng)
    files: dict[str, str] = {}
    for i in range(FILES):
        lines = [" ".join(rng.choice(words) for _ in range(rng.randint(5, 12))) for _ in range(rng.randint(8, 20))]
        if i % 10 == 0:
            lines.insert(rng.randrange(len(lines)), f"found needle-{i} here")
        rel = f"d{i % DIRS:02d}/f{i:04d}.txt"
        files[rel] = "\n".join(lines) + "\n"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[rel])
    return files


BENCH_INV = {"max_calls_per_invocation": 1_000_000, "max_identical_calls": REPEATS_ALLOWED}
"""An invocation's profile replaces the Runtime's: without `max_identical_calls` here the guard refuses the 4th
identical call (the grep rows and the stop rows of earlier figures timed or crashed on that refusal)."""


def interleaved_ms(variants: dict[str, Callable[[], object]], repeats: int,
                   checks: dict[str, Check] | None = None) -> dict[str, float]:
    """Median ms per call of each variant, round-robin. `checks`: per variant, a check of each value returned,
    outside the clock (a refused or failed tool call is not the work being timed)."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    checks = checks or {}
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            out = fn()
            samples[name].append((time.perf_counter() - start) * 1000)
            if name in checks:
                checks[name](out)
    return {name: statistics.median(values) for name, values in samples.items()}


def _print(rows: dict[str, float], baseline: str) -> None:
    width = max(map(len, rows))
    for name, ms in rows.items():
        print(f"  {name:<{width}}  {ms:9.3f} ms   {ms / rows[baseline]:7.2f}× {baseline}")


PER_CALL = {"echo hi": "echo hi", "python3 print": "python3 -c 'print(1)'", "node print": "node -e 'console.log(1)'"}


def echo_bench(home: Path) -> dict[str, float]:
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-echo", profile=BENCH_INV)
    calls = {name: [{"id": "e", "name": "workspace_shell", "arguments": {"command": cmd}}]
             for name, cmd in PER_CALL.items()}
    firsts = {}
    for name, call in calls.items():
        [firsts[name]] = inv.run(call)
        assert firsts[name].content == ("Exit code: 0\nhi" if name == "echo hi" else "Exit code: 0\n1"), name
    rows = interleaved_ms({
        "subprocess bash -c 'echo hi'": lambda: subprocess.run(["bash", "-c", "echo hi"], capture_output=True),
        **{f"workspace_shell {name}": (lambda c=call: inv.run(c)) for name, call in calls.items()},
    }, repeats=60, checks={f"workspace_shell {name}": same_as(first) for name, first in firsts.items()})
    print("per call, median of 60 interleaved runs:")
    _print(rows, "subprocess bash -c 'echo hi'")
    rt.close()
    return rows


def grep_bench(home: Path) -> dict[str, float]:
    from bashkit import Bash

    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-grep", profile=BENCH_INV)
    root = inv.run_state.workspace_root / "scratch" / "tree"
    files = make_tree(root)
    call = [{"id": "g", "name": "workspace_shell",
             "arguments": {"command": "grep -rn 'needle-[0-9]*' scratch/tree | wc -l"}}]
    [first] = inv.run(call)
    assert first.content == "Exit code: 0\n300", first.content

    def preloaded() -> None:
        bash = Bash(cwd="/")
        fs = bash.fs()
        for rel, text in files.items():
            path = f"/scratch/tree/{rel}"
            if not fs.exists(path.rsplit("/", 1)[0]):
                fs.mkdir(path.rsplit("/", 1)[0], True)
            fs.write_file(path, text.encode())
        out = bash.execute_sync("grep -rn 'needle-[0-9]*' /scratch/tree | wc -l").stdout
        assert out.strip() == "300", out

    host = ["grep", "-rn", "needle-[0-9]*", str(root)]
    rows = interleaved_ms({
        "host grep -rn": lambda: subprocess.run(host, capture_output=True),
        "workspace_shell grep -rn (real mount)": lambda: inv.run(call),
        "bashkit VFS preload + grep -rn": preloaded,
    }, repeats=7, checks={"workspace_shell grep -rn (real mount)": same_as(first)})
    print(f"grep -rn over {FILES:,} files, median of 7 interleaved runs:")
    _print(rows, "host grep -rn")
    rt.close()
    return rows


STOPS = {
    "bash loop": "while true; do echo $RANDOM > /scratch/n; done",
    "python3 loop": "python3 -c 'i = 0\nwhile True:\n    i += 1\n    open(\"/scratch/n\", \"w\").write(str(i))'",
    "js loop": "node -e 'for (;;) workspace.writeText(\"/scratch/n\", String(Date.now()))'",
    "js native op (killed)": "node -e 'for (;;) String(7n ** 300000n)'",
    "sleep 100": "sleep 100",
}


def stop_bench(home: Path, timeout_s: float = 0.5, repeats: int = 5) -> dict[str, float]:
    """How long after its deadline a timed-out call returns (its work has stopped by then)."""
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-stop", profile={**BENCH_INV, "shell_timeout_s": timeout_s})
    rows: dict[str, float] = {}
    for name, command in STOPS.items():
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            out = inv.run([{"id": "s", "name": "workspace_shell", "arguments": {"command": command}}])[0]
            samples.append((time.perf_counter() - start - timeout_s) * 1000)
            assert out.error_code == "workspace.shell_timeout", out.content
        rows[name] = statistics.median(samples)
    print(f"returned after the deadline ({timeout_s:g} s limit; a worker is killed 500 ms after it), "
          f"median of {repeats}:")
    width = max(map(len, rows))
    for name, ms in rows.items():
        print(f"  {name:<{width}}  {ms:9.1f} ms")
    rt.close()
    return rows


_DRIVER = """
import json, sys, tempfile, time
from pathlib import Path
import tooldeck
rt = tooldeck.Runtime(Path(tempfile.mkdtemp()) / "home", records=False)
try:
    inv = rt.invocation(run_id="bench", profile={"max_calls_per_invocation": 10**9, "max_identical_calls": 10**9})
except Exception:  # a checkout from before the repeated-call guard does not know the key
    inv = rt.invocation(run_id="bench", profile={"max_calls_per_invocation": 10**9})
print(json.dumps(tooldeck.__file__), flush=True)
for line in sys.stdin:
    call = [{"id": "c", "name": "workspace_shell", "arguments": {"command": json.loads(line)}}]
    start = time.perf_counter()
    out = inv.run(call)[0]
    print(json.dumps([time.perf_counter() - start, "ERROR " + out.content if out.is_error else out.content]),
          flush=True)
"""


class _Side:
    """One checkout's `src/` in its own process, running shell calls on request."""

    def __init__(self, src: str) -> None:
        env = dict(os.environ, PYTHONPATH=src)
        self.proc = subprocess.Popen([sys.executable, "-c", _DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.where = json.loads(self.proc.stdout.readline())

    def call(self, command: str) -> tuple[float, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        seconds, content = json.loads(self.proc.stdout.readline())
        return seconds * 1000, content

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def baseline_bench(baseline_src: str, repeats: int = 101) -> None:
    here = str(Path(__file__).resolve().parent.parent / "src")
    sides = {"this checkout": _Side(here), "baseline": _Side(baseline_src)}
    print("sides: " + ", ".join(f"{k} = {v.where}" for k, v in sides.items()))
    samples: dict[tuple[str, str], list[float]] = {(n, s): [] for n in PER_CALL for s in sides}
    for side in sides.values():
        for command in PER_CALL.values():
            for _ in range(3):
                assert side.call(command)[1].startswith("Exit code: 0"), command
    order = list(sides.items())
    for _ in range(repeats):
        for name, command in PER_CALL.items():
            order.reverse()  # each side goes first as often: a call's after-effects land on both alike
            for side_name, side in order:
                ms, content = side.call(command)
                assert content.startswith("Exit code: 0"), (side_name, command, content)
                samples[(name, side_name)].append(ms)
    print(f"per call through Invocation.run, median of {repeats} interleaved runs (sides alternate first):")
    for name in PER_CALL:
        new, old = (statistics.median(samples[(name, s)]) for s in sides)
        print(f"  {name:<14} this checkout {new:7.3f} ms   baseline {old:7.3f} ms   {new / old:5.2f}× baseline")
    for side in sides.values():
        side.close()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--baseline-src":
        baseline_bench(sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as tmp:
        echo_bench(Path(tmp) / "echo")
        grep_bench(Path(tmp) / "grep")
        stop_bench(Path(tmp) / "stop")


if __name__ == "__main__":
    main()
