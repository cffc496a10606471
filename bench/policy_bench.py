"""The gate's policy costs, each against the same gate without it, in one run (issue 19):

- argument rules: 50 rules in the Profile, five of them naming the called tool (JSON-pointer rules),
  vs no rules: target ≤ +2 µs a call;
- a shell command through six command rules (each line different, so bashkit's parser runs every time)
  vs the same calls without rules;
- the repeated-call guard (on by default) vs `max_identical_calls = 0`;
- one Python pre-call hook (allowing every call) vs no hook: a whole one-call turn, records off;
- an executable pre-call hook (`true`, which reads nothing and allows) beside a bare `subprocess.run` of
  the same program fed the same JSON, and beside the same turn without the hook;
- a turn of four calls whose executable pre-call hook takes 0.1 s (`sleep 0.1`): concurrency-safe calls,
  whose hooks run together, vs the same tool listed in `serial`, whose hooks run one after another.

    python -m bench.policy_bench
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tooldeck
from bench.timing import REPEATS_ALLOWED

SHELL = "builtin:workspace.shell"
OTHER_RULES = [{"tool": f"extension/other{i}:*", "match": {"/x": f"v{i}*"}, "permission": "deny"} for i in range(45)]
ADD_RULES = [{"tool": "extension/bench:add", "match": {"/a": str(100 + i)}, "permission": "deny"} for i in range(5)]
SHELL_RULES = [
    {"tool": SHELL, "command": "git diff:*", "permission": "allow"},
    {"tool": SHELL, "command": "ls:*", "permission": "allow"},
    {"tool": SHELL, "command": "echo:*", "permission": "allow"},
    {"tool": SHELL, "command": "rm:*", "permission": "deny"},
    {"tool": SHELL, "command": "curl:*", "permission": "deny"},
    {"tool": SHELL, "command": "git push:*", "permission": "ask"},
]


async def add(a: int, b: int) -> int:
    return a + b


def _gate(home: Path, profile: dict[str, Any]) -> Any:
    rt = tooldeck.Runtime(home, records=False, profile=profile)
    rt.tool(extension_id="bench")(add)
    return rt, rt.invocation().gate


def one_call_turn(gate: Any, call: Callable[[int], tuple[str, dict[str, Any]]]) -> Callable[[int], object]:
    """The gate's part of a one-call turn, as `Invocation._one_call` runs it: a new turn for the repeated-call
    guard when it is on, then the check. Without the new turn every check after the first would be the same
    call again in one turn, the guard's shortcut, not its per-call path (the earlier guard figure timed that)."""
    repeats = gate.repeats

    def run(i: int) -> object:
        name, args = call(i)
        if repeats is not None:
            repeats.begin_turn()
        return gate.check("c", name, args)
    return run


def _interleaved(variants: dict[str, Callable[[int], object]], inner: int, repeats: int = 21) -> dict[str, float]:
    """Median µs per call, interleaved; the last outcome of each batch must be an admission."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            for i in range(inner):
                out = fn(i)
            samples[name].append((time.perf_counter() - start) / inner * 1e6)
            assert type(out).__name__ == "Admitted", (name, out)
    return {name: statistics.median(v) for name, v in samples.items()}


def _row(title: str, base: str, figures: dict[str, float]) -> None:
    print(title)
    b = figures[base]
    for name, value in figures.items():
        print(f"  {name:<34} {value:8.2f} µs  {value / b:5.2f}× {base}  ({value - b:+.2f} µs)")


def main() -> None:
    home = Path(tempfile.mkdtemp())
    base = {"allow": ["extension/*", SHELL], "max_identical_calls": REPEATS_ALLOWED, "max_calls_per_invocation": 10**9}
    rts = []
    rt, plain = _gate(home / "plain", base)
    rts.append(rt)
    rt, ruled = _gate(home / "ruled", {**base, "rules": OTHER_RULES + ADD_RULES})
    rts.append(rt)
    rt, shell_plain = _gate(home / "shell_plain", base)
    rts.append(rt)
    rt, shell_ruled = _gate(home / "shell_ruled", {**base, "rules": SHELL_RULES})
    rts.append(rt)
    rt, no_guard = _gate(home / "no_guard", {**base, "max_identical_calls": 0})
    rts.append(rt)
    args = {"a": 1, "b": 2}
    for g in (plain, ruled, no_guard):
        assert type(g.check("c", "add", args)).__name__ == "Admitted"
    assert type(ruled.check("c", "add", {"a": 101, "b": 2})).__name__ == "Refused"

    def check(gate: Any) -> Callable[[int], object]:
        return one_call_turn(gate, lambda _i: ("add", args))

    _row("The gate's check of one call (median of 21 interleaved batches of 20,000):", "no rules",
         _interleaved({"no rules": check(plain), "50 rules (5 for this tool)": check(ruled)}, 20_000))
    commands = [f"git diff --stat HEAD~{i} && ls -la dir{i} | echo done{i}" for i in range(200_000)]

    def shell(gate: Any) -> Callable[[int], object]:
        return one_call_turn(gate, lambda i: ("workspace_shell", {"command": commands[i]}))

    counter = iter(range(10**9))

    def fresh(gate: Any) -> Callable[[int], object]:  # a new line each call: the parser runs every time
        return one_call_turn(gate, lambda _i: ("workspace_shell", {"command": commands[next(counter) % len(commands)]}))

    for g, name in ((shell_plain, "no rules"), (shell_ruled, "6 command rules")):
        outcome = shell(g)(1)
        assert type(outcome).__name__ == "Admitted", (name, outcome)

    _row("A shell command line of three commands (median of 9 interleaved batches of 2,000):", "no rules",
         _interleaved({"no rules": shell(shell_plain), "6 command rules, line parsed": fresh(shell_ruled)}, 2_000,
                      repeats=9))
    _row("The repeated-call guard (on by default) (median of 21 interleaved batches of 20,000 gate checks):",
         "guard off", _interleaved({"guard off": check(no_guard), "guard on": check(plain)}, 20_000))
    _hooks(home, {**base, "max_identical_calls": 0})  # the guard apart: its streak of 100,000 calls is not the hook
    _turn_hooks(home, {**base, "max_identical_calls": 0})
    for r in rts:
        r.close()


def _turns(inv: Any, loop: asyncio.AbstractEventLoop) -> Callable[[int], object]:
    calls = [{"id": "c", "name": "add", "arguments": '{"a": 1, "b": 2}'}]

    async def many(n: int) -> None:
        for _ in range(n):
            out = await inv.arun(calls)
        assert out[0].content == "3", out[0].content  # the last turn of the batch ran the tool: one check a batch

    return lambda n: loop.run_until_complete(many(n))


def _batched(variants: dict[str, Callable[[int], object]], inner: int, repeats: int) -> dict[str, float]:
    """Median µs per call of `fn(inner)` (each runs `inner` calls itself), interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn(inner)
            samples[name].append((time.perf_counter() - start) / inner * 1e6)
    return {name: statistics.median(v) for name, v in samples.items()}


def _hooks(home: Path, base: dict[str, Any]) -> None:
    rt_plain, _ = _gate(home / "hook_none", base)
    rt_py, _ = _gate(home / "hook_py", base)
    rt_py.hooks.pre("extension/bench:add")(lambda call: None)
    true = shutil.which("true") or "/bin/true"
    rt_exe, _ = _gate(home / "hook_exe", {**base, "hooks": [{"event": "pre_call", "tool": "extension/bench:add",
                                                                "command": [true]}]})
    loop = rt_plain.loop()
    plain, py, exe = rt_plain.invocation(), rt_py.invocation(), rt_exe.invocation()
    for inv in (plain, py, exe):
        assert inv.run([{"id": "c", "name": "add", "arguments": '{"a": 1, "b": 2}'}])[0].content == "3"
    _row("One Python pre-call hook, a one-call turn with records off (median of 21 interleaved batches of 5,000):",
         "no hook", _batched({"no hook": _turns(plain, loop), "1 Python pre-call hook": _turns(py, loop)}, 5_000, 21))
    payload = json.dumps({"event": "pre_call", "tool_id": "extension/bench:add", "call_name": "add",
                          "arguments": {"a": 1, "b": 2}, "call_id": "c", "run_id": "r", "invocation_id": "i"}).encode()

    def bare(n: int) -> None:
        for _ in range(n):
            subprocess.run([true], input=payload, capture_output=True, cwd=home, env={"PATH": "/usr/bin:/bin"},
                           check=True, start_new_session=True)

    _row(f"An executable pre-call hook ({true}) (median of 9 interleaved batches of 40):", "bare subprocess.run",
         _batched({"bare subprocess.run": bare, "turn with the hook": _turns(exe, loop),
                   "turn without a hook": _turns(plain, loop)}, 40, 9))
    for r in (rt_plain, rt_py, rt_exe):
        r.close()


def _turn_hooks(home: Path, base: dict[str, Any]) -> None:
    sleep = shutil.which("sleep") or "/bin/sleep"
    hooks = [{"event": "pre_call", "tool": "extension/bench:add", "command": [sleep, "0.1"]}]
    rt_together, _ = _gate(home / "turn_together", {**base, "hooks": hooks})
    rt_serial, _ = _gate(home / "turn_serial", {**base, "hooks": hooks, "serial": ["extension/bench:add"]})
    loop = rt_together.loop()
    turn = [{"id": f"c{i}", "name": "add", "arguments": '{"a": 1, "b": 2}'} for i in range(4)]
    invs = {"serial tool (hooks one by one)": rt_serial.invocation(),
            "concurrency-safe (hooks together)": rt_together.invocation()}
    samples: dict[str, list[float]] = {name: [] for name in invs}
    for _ in range(7):
        for name, inv in invs.items():
            start = time.perf_counter()
            results = loop.run_until_complete(inv.arun(turn))
            samples[name].append((time.perf_counter() - start) * 1e3)
            assert [r.content for r in results] == ["3"] * 4
    base_ms = statistics.median(samples["serial tool (hooks one by one)"])
    print("A turn of 4 calls, each with an executable pre-call hook of 0.1 s (median of 7 interleaved turns):")
    for name, values in samples.items():
        ms = statistics.median(values)
        print(f"  {name:<34} {ms:8.1f} ms  {ms / base_ms:5.2f}× serial tool")
    for r in (rt_together, rt_serial):
        r.close()


if __name__ == "__main__":
    main()
