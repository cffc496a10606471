"""Start-up of the `tooldeck` command, against `python -c "import json"` in the same run.

Each command is a fresh process, as a user runs it; the home is a fresh temp dir with no MCP config
(plus one recorded call, so `records list` has a row). Measured with hyperfine when it is on PATH,
else by repeated subprocess runs, round-robin so that load on a shared machine falls on every
command alike. Printed per command: wall time (median, min), CPU time (user + system, median) and
the ratio of the median wall time to the baseline's.

Reading it on a loaded machine: load stretches every process alike, so the ratio holds; the time on
an idle machine is about `ratio × the baseline's idle time`, estimated by the baseline's fastest run
(a 20 ms process often gets a free core). That estimate is printed beside each command's CPU time
(user + system: a start-up is one busy thread), with the load average.

    python -m bench.startup_bench                      # 20 runs of each command
    python -m bench.startup_bench --runs 40 --no-hyperfine   # round-robin subprocess runs even with hyperfine
    python -m bench.startup_bench --baseline-src DIR   # also each tooldeck command with PYTHONPATH=DIR (another
                                                       # checkout's src/, before/after a change, same run)
    python -m bench.startup_bench --importtime         # `-X importtime` of `call` and `tools`: the top offenders

For example, against the commit before a change:

    git archive <commit> src | tar -x -C /tmp/base && python -m bench.startup_bench --baseline-src /tmp/base/src
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

TOOLDECK = str(Path(sys.executable).with_name("tooldeck"))
DICE = '{"formula":"d6"}'
# Targets of issue 13 on an idle machine (seconds).
TARGETS = {"call dice_roll": 0.25, "tools": 0.3}


@dataclass
class Command:
    name: str
    argv: list[str]
    env: dict[str, str] | None = None
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def commands(home: Path, baseline_src: str | None) -> list[Command]:
    h = ["--home", str(home)]
    tooldeck = {"--help": ["--help"], "call dice_roll": ["call", "dice_roll", DICE, *h], "tools": ["tools", *h],
                "records list": ["records", "list", *h]}
    out = [Command('python -c "import json"', [sys.executable, "-c", "import json"])]
    out += [Command(f"tooldeck {name}", [TOOLDECK, *args]) for name, args in tooldeck.items()]
    if baseline_src:
        env = {**os.environ, "PYTHONPATH": baseline_src}
        out += [Command(f"base: tooldeck {name}", [TOOLDECK, *args], env) for name, args in tooldeck.items()]
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(cmd: Command) -> None:
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd.argv, env=cmd.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{cmd.name} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace')}")
    cmd.wall.append(wall)
    cmd.cpu.append(_children_cpu() - cpu0)


def measure_subprocess(cmds: list[Command], runs: int, warmup: int = 2) -> None:
    for cmd in cmds:
        for _ in range(warmup):
            run_once(cmd)
        cmd.wall.clear()
        cmd.cpu.clear()
    for _ in range(runs):
        for cmd in cmds:
            run_once(cmd)


def measure_hyperfine(hyperfine: str, cmds: list[Command], runs: int) -> None:
    """One hyperfine run per command (its own warm-up and statistics); CPU is hyperfine's user + system mean."""
    for cmd in cmds:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([hyperfine, "--warmup", "2", "--runs", str(runs), "--shell=none", "--style", "none",
                            "--export-json", out.name, subprocess.list2cmdline(cmd.argv)],
                           env=cmd.env, check=True, stdout=subprocess.DEVNULL)
            [result] = json.loads(Path(out.name).read_text())["results"]
        cmd.wall = list(result["times"])
        cmd.cpu = [result["user"] + result["system"]]


def report(cmds: list[Command], method: str) -> None:
    base = cmds[0]
    base_wall, base_idle = statistics.median(base.wall), min(base.wall)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"start-up: {method}, {len(base.wall)} runs each; load average {load}; {os.cpu_count()} CPUs")
    print(f"baseline {base.name}: wall median {base_wall * 1e3:.1f} ms, fastest {base_idle * 1e3:.1f} ms "
          f"(the idle estimate), CPU {statistics.median(base.cpu) * 1e3:.1f} ms")
    width = max(len(c.name) for c in cmds)
    print(f"  {'command':<{width}}  wall median  fastest    CPU   ratio  idle estimate  target")
    for cmd in cmds:
        wall, cpu = statistics.median(cmd.wall), statistics.median(cmd.cpu)
        ratio = wall / base_wall
        idle = ratio * base_idle  # on an idle machine: the ratio times the baseline's idle time
        target = TARGETS.get(cmd.name.removeprefix("tooldeck "))
        verdict = "" if target is None or cmd.name.startswith("base:") else \
            f"≤ {target:.2f} s ({target / base_idle:.1f}×): {'met' if idle <= target else 'NOT met'}"
        print(f"  {cmd.name:<{width}}  {wall:9.3f} s  {min(cmd.wall):7.3f}  {cpu:5.3f}  {ratio:5.1f}×  "
              f"{idle:9.3f} s  {verdict}")


def _prepare(home: Path) -> None:
    """One recorded call, and proof that the timed `call dice_roll` does the work: `tooldeck call` exits 0 on
    a tool's error too, so its result is read here (each timed run is a fresh process, with a fresh
    repeated-call guard and budget, and a random roll)."""
    out = subprocess.run([TOOLDECK, "call", "dice_roll", DICE, "--home", str(home)], check=True,
                         capture_output=True, text=True).stdout
    result = json.loads(out)
    assert not result["is_error"] and result["content"].startswith("Rolled 1d6: "), out


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def importtime(argv: list[str], env: dict[str, str] | None = None) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) of every import of one run of the CLI under `-X importtime`."""
    code = f"import sys; sys.argv = {['tooldeck', *argv]!r}; from tooldeck.cli import main; main()"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True,
                          text=True, check=False)
    rows = []
    for line in proc.stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if m:
            rows.append((m.group(4), int(m.group(1)), int(m.group(2))))
    return rows


def print_importtime(name: str, rows: list[tuple[str, int, int]], top: int = 12) -> None:
    by_package: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for module, own, _ in rows:
        by_package[module.split(".")[0]] += own
        count[module.split(".")[0]] += 1
    total = sum(by_package.values())
    print(f"\n-X importtime: {name}: {len(rows)} modules, {total / 1e3:.0f} ms of imports (self times)")
    print("  package (self time summed)      ms  modules")
    for package, own in by_package.most_common(top):
        print(f"  {package:<28} {own / 1e3:6.1f}  {count[package]:7d}")
    print("  module (cumulative)                                    ms")
    firsts = [(module, cumulative) for module, _, cumulative in rows if module.split(".")[0] != "encodings"]
    for module, cumulative in sorted(firsts, key=lambda r: -r[1])[:top]:
        print(f"  {module:<50} {cumulative / 1e3:6.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.startup_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--baseline-src", metavar="DIR", help="PYTHONPATH for a `base:` copy of each command")
    parser.add_argument("--no-hyperfine", action="store_true", help="time with subprocess runs even if "
                                                                      "hyperfine is installed")
    parser.add_argument("--importtime", action="store_true", help="only the -X importtime summary")
    args = parser.parse_args(argv or [])
    with tempfile.TemporaryDirectory(prefix="tooldeck-startup-") as tmp:
        home = Path(tmp) / "home"
        _prepare(home)
        if args.importtime:
            envs: list[tuple[str, dict[str, str] | None]] = [("", None)]
            if args.baseline_src:
                envs.append(("base: ", {**os.environ, "PYTHONPATH": args.baseline_src}))
            for label, env in envs:
                for name, cli in (("call dice_roll", ["call", "dice_roll", DICE]), ("tools", ["tools"])):
                    print_importtime(f"{label}tooldeck {name}", importtime([*cli, "--home", str(home)], env))
            return
        cmds = commands(home, args.baseline_src)
        hyperfine = None if args.no_hyperfine else shutil.which("hyperfine")
        if hyperfine:
            measure_hyperfine(hyperfine, cmds, args.runs)
        else:
            measure_subprocess(cmds, args.runs)
        report(cmds, f"hyperfine ({hyperfine})" if hyperfine else "subprocess runs, round-robin")


if __name__ == "__main__":
    main(sys.argv[1:])
