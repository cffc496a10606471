"""The sandboxed shell against the host shell, in the same run:

- `echo hi` through the whole pipeline (`Invocation.run` → gate → dispatch → a fresh bashkit
  interpreter with the workspace mounted → projection) vs `subprocess.run(["bash", "-c", "echo hi"])`;
- `grep -rn` over a 3,000-file workspace through the tool vs host `grep -rn` on the same folder, plus
  the alternative layout considered (the same files preloaded into bashkit's in-memory VFS).

    python -m bench.shell_bench
"""

from __future__ import annotations

import random
import statistics
import string
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import tooldeck

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


def interleaved_ms(variants: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def _print(rows: dict[str, float], baseline: str) -> None:
    width = max(map(len, rows))
    for name, ms in rows.items():
        print(f"  {name:<{width}}  {ms:9.3f} ms   {ms / rows[baseline]:7.2f}× {baseline}")


def echo_bench(home: Path) -> dict[str, float]:
    rt = tooldeck.Runtime(home, records=False)
    inv = rt.invocation(run_id="bench-echo", profile={"max_calls_per_invocation": 1_000_000})
    call = [{"id": "e", "name": "workspace_shell", "arguments": {"command": "echo hi"}}]
    assert inv.run(call)[0].content == "Exit code: 0\nhi"
    rows = interleaved_ms({
        "subprocess bash -c 'echo hi'": lambda: subprocess.run(["bash", "-c", "echo hi"], capture_output=True),
        "workspace_shell 'echo hi'": lambda: inv.run(call),
    }, repeats=60)
    print("echo hi, median of 60 interleaved runs:")
    _print(rows, "subprocess bash -c 'echo hi'")
    rt.close()
    return rows


def grep_bench(home: Path) -> dict[str, float]:
    from bashkit import Bash

    rt = tooldeck.Runtime(home, records=False)
    inv = rt.invocation(run_id="bench-grep", profile={"max_calls_per_invocation": 1_000_000})
    root = inv.run_state.workspace_root / "scratch" / "tree"
    files = make_tree(root)
    call = [{"id": "g", "name": "workspace_shell",
             "arguments": {"command": "grep -rn 'needle-[0-9]*' scratch/tree | wc -l"}}]
    assert inv.run(call)[0].content == "Exit code: 0\n300", inv.run(call)[0].content

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
    }, repeats=7)
    print(f"grep -rn over {FILES:,} files, median of 7 interleaved runs:")
    _print(rows, "host grep -rn")
    rt.close()
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        echo_bench(Path(tmp) / "echo")
        grep_bench(Path(tmp) / "grep")


if __name__ == "__main__":
    main()
