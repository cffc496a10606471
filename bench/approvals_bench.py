"""What a remembered approval costs an `ask` call (issue 19 item 2), in one run, records off:

- `allow`: the tool allowed outright (no confirmation at all): the baseline;
- `ask, callback True, no records file`: the callback answers every call, nothing to look in (as before
  remembered approvals);
- `ask, callback True`: the same, the home has an approvals table (looked in first, every call);
- `ask, remembered run approval`: the first call's `Approval("run")` settles the others (no callback);
- `ask, remembered pattern (shell)`: `Approval("pattern", command="echo:*")` on a shell line, against
  the shell allowed outright (the line is parsed for the pattern).

    python -m bench.approvals_bench
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import tooldeck
from bench.timing import REPEATS_ALLOWED, ainterleaved_us, report

DICE = "builtin:dice.roll"
SHELL = "builtin:workspace.shell"
BASE: dict[str, Any] = {"max_identical_calls": REPEATS_ALLOWED, "max_calls_per_invocation": 10**9}


def _runtime(home: Path, permission: str, answer: Any) -> tooldeck.Runtime:
    profile = {**BASE, "permissions": {DICE: permission, SHELL: permission}}
    return tooldeck.Runtime(home, records=False, profile=profile, confirm=None if answer is None else lambda _r: answer)


def _caller(inv: Any, name: str, args: dict[str, Any]) -> Callable[[], Awaitable[object]]:
    call = [{"id": "c", "name": name, "arguments": args}]

    async def one() -> object:
        out = (await inv.arun(call))[0]
        assert not out.is_error or out.error_code == "workspace.shell_exit", out.content
        return out

    return one


async def _main(home: Path) -> None:
    roll = {"formula": "1d6"}
    line = {"command": "echo a | echo b"}
    rts = {"allow": _runtime(home / "allow", "allow", None),
           "callback": _runtime(home / "callback", "ask", True),
           "bare": _runtime(home / "bare", "ask", True),
           "run": _runtime(home / "run", "ask", tooldeck.Approval("run")),
           "pattern": _runtime(home / "pattern", "ask", tooldeck.Approval("pattern", command="echo:*"))}
    for name, rt in rts.items():
        if name != "bare":
            (rt.home / "records.sqlite").touch()  # every home has a records database to look in
    invs = {name: rt.invocation(run_id="r") for name, rt in rts.items()}
    for name in ("run", "pattern"):  # the first call asks and remembers; afterwards nobody is asked
        await _caller(invs[name], "workspace_shell" if name == "pattern" else "dice_roll",
                      line if name == "pattern" else roll)()
        invs[name].confirm = None
    rows = await ainterleaved_us({
        "allow": _caller(invs["allow"], "dice_roll", roll),
        "ask, callback True, no records file": _caller(invs["bare"], "dice_roll", roll),
        "ask, callback True": _caller(invs["callback"], "dice_roll", roll),
        "ask, remembered run approval": _caller(invs["run"], "dice_roll", roll),
    }, inner=300, repeats=15, warmup=20)
    print("One dice_roll call (median of 15 interleaved batches of 300):")
    report(rows, "allow")
    rows = await ainterleaved_us({
        "shell allowed": _caller(invs["allow"], "workspace_shell", line),
        "shell, remembered pattern": _caller(invs["pattern"], "workspace_shell", line),
    }, inner=30, repeats=11, warmup=5)
    print("One shell line `echo a | echo b` (median of 11 interleaved batches of 30):")
    report(rows, "shell allowed")
    for rt in rts.values():
        rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_main(Path(tmp)))


if __name__ == "__main__":
    main()
