"""Script tools (docs/scripts.md) against the host, in the same run:

- a `python` script tool that echoes its input, called through the whole pipeline (`Invocation.run` →
  gate → dispatch → a shell worker running the script in the sandbox → projection), vs the same
  script run on the host with `subprocess.run(["python3", "script.py"], input=...)` (the real
  interpreter binary, and also whatever `python3` is on PATH);
- a catalog of 500 script tools: the first load (every tool.json read), an invocation when nothing
  changed (a stat per file, no read, the snapshot reused), and one after one tool.json changed.

    python -m bench.scripts_bench
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tooldeck
from bench.shell_bench import BENCH_INV, interleaved_ms
from bench.timing import REPEATS_ALLOWED, same_as

HOST_ECHO = "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"
SANDBOX_ECHO = "import json, os\nprint(json.dumps({'echo': json.loads(os.environ['TOOLDECK_ARGS'])}))\n"
TOOLS = 500


def _tool(home: Path, name: str, body: str) -> Path:
    folder = home / "tools" / "script" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tool.json").write_text(json.dumps({
        "name": name, "description": f"Echo its input ({name}).",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}))
    (folder / "script.py").write_text(body)
    return folder


def call_bench(home: Path) -> dict[str, float]:
    folder = _tool(home, "echo", SANDBOX_ECHO)
    (folder / "host.py").write_text(HOST_ECHO)
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    inv = rt.invocation(run_id="bench-scripts", profile=BENCH_INV)  # it replaces the Runtime's profile
    call = [{"id": "s", "name": "script_echo", "arguments": {"text": "hi"}}]
    [first] = inv.run(call)
    assert first.structured == {"echo": {"text": "hi"}}
    payload = json.dumps({"text": "hi"}).encode()
    host = subprocess.run(["python3", str(folder / "host.py")], input=payload, capture_output=True, check=True)
    assert json.loads(host.stdout) == {"echo": {"text": "hi"}}
    real = os.path.realpath(sys.executable)  # `python3` on PATH may be a launcher script (pyenv's shim is)
    rows = interleaved_ms({
        "host subprocess python3 script.py": lambda: subprocess.run([real, str(folder / "host.py")],
                                                                    input=payload, capture_output=True),
        "host, `python3` from PATH": lambda: subprocess.run(["python3", str(folder / "host.py")],
                                                            input=payload, capture_output=True),
        "script_echo through the pipeline": lambda: inv.run(call),
    }, repeats=40, checks={"script_echo through the pipeline": same_as(first)})
    base = rows["host subprocess python3 script.py"]
    print("per call, median of 40 interleaved runs:")
    for name, ms in rows.items():
        print(f"  {name:<36} {ms:9.3f} ms   {ms / base:6.2f}× host")
    rt.close()
    return rows


def catalog_bench(home: Path) -> None:
    for i in range(TOOLS):
        _tool(home, f"t{i:03d}", SANDBOX_ECHO)
    start = time.perf_counter()
    rt = tooldeck.Runtime(home, records=False, profile={"max_identical_calls": REPEATS_ALLOWED})
    first = rt.invocation(run_id="bench-catalog")
    load_ms = (time.perf_counter() - start) * 1000
    assert sum(1 for b in first.snapshot.bindings if b.call_name.startswith("script_")) == TOOLS
    source = rt.catalog.source("script")
    reads = source.reads  # type: ignore[attr-defined]
    unchanged: list[float] = []
    for _ in range(30):
        t = time.perf_counter()
        inv = rt.invocation(run_id="bench-catalog")
        unchanged.append((time.perf_counter() - t) * 1000)
        assert inv.snapshot.id == first.snapshot.id
    assert source.reads == reads, "an unchanged tool.json was read again"  # type: ignore[attr-defined]
    scan: list[float] = []
    for _ in range(30):
        t = time.perf_counter()
        source.descriptors()  # type: ignore[attr-defined]
        scan.append((time.perf_counter() - t) * 1000)
    builtins_only = tooldeck.Runtime(Path(tempfile.mkdtemp()), records=False)
    empty: list[float] = []
    for _ in range(30):
        t = time.perf_counter()
        builtins_only.invocation(run_id="bench-empty")
        empty.append((time.perf_counter() - t) * 1000)
    target = home / "tools" / "script" / "t250" / "tool.json"
    meta = json.loads(target.read_text())
    meta["description"] = "Changed."
    target.write_text(json.dumps(meta))
    os.utime(target, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    t = time.perf_counter()
    changed = rt.invocation(run_id="bench-catalog")
    changed_ms = (time.perf_counter() - t) * 1000
    assert changed.snapshot.id != first.snapshot.id and source.reads == reads + 1  # type: ignore[attr-defined]
    e = statistics.median(empty)
    print(f"catalog of {TOOLS} script tools:")
    print(f"  first load (runtime + first invocation)  {load_ms:9.2f} ms")
    print(f"  invocation, nothing changed (median)     {statistics.median(unchanged):9.2f} ms   "
          f"{statistics.median(unchanged) / e:6.2f}× an invocation with no script tools ({e:.2f} ms)")
    print(f"  of which the stat scan (median)          {statistics.median(scan):9.2f} ms   "
          f"({reads} tool.json reads in all, none since the first load)")
    print(f"  invocation after one tool.json changed   {changed_ms:9.2f} ms   (1 file re-read, new snapshot)")
    rt.close()
    builtins_only.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        call_bench(Path(tmp) / "calls")
        catalog_bench(Path(tmp) / "catalog")


if __name__ == "__main__":
    main()
