"""Executable hooks: a program told about a call as JSON on stdin, answering as JSON on stdout.

- exit 0: stdout is empty (allow, unchanged) or one JSON object (`hooks.answer_from`);
- exit 2: the call is denied (`hook.denied`), stderr is the reason;
- any other exit, a signal, a program that cannot start: `hook.failed` (the call stops, fail closed).

The program runs with cwd = the tooldeck home and a minimal environment (`PATH`, `LANG`, `HOME` and
`TOOLDECK_HOME` = the home, `TOOLDECK_HOOK_EVENT`): nothing else of the host's environment reaches it.
It runs in a process group of its own; when it passes its timeout, or when it exits, the whole group
is killed, so nothing it started outlives its answer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from tooldeck.policy.hooks import FAILED, INVALID_OUTPUT, TIMEOUT, Hook, HookAnswer, HookCall, HookFailure, answer_from
from tooldeck.process_group import kill_group, spawn

DENY_EXIT = 2
"""The exit code that denies the call with stderr as the reason (as Claude Code's hooks)."""
STDOUT_LIMIT = 1 << 20
STDERR_LIMIT = 64 << 10
_REAP_S = 2.0
"""How long a killed hook's pipes may stay open before tooldeck closes them (see `_reap`)."""
_SHOWN = 300
"""Characters of stderr a failure's message quotes."""


def environment(home: Path, event: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH") or os.defpath, "LANG": "C.UTF-8", "HOME": str(home),
            "TOOLDECK_HOME": str(home), "TOOLDECK_HOOK_EVENT": event}


def program(command: list[str], home: Path) -> list[str]:
    """A relative program path with a slash (`./check.sh`) is the home's; a bare name is looked up on PATH."""
    first = command[0]
    if "/" in first and not os.path.isabs(first):
        first = str(home / first)
    return [first, *command[1:]]


def executable_hook(event: str, tool: str, command: list[str], timeout_s: float, home: Path,
                    name: str | None = None) -> Hook:
    argv = program(command, home)
    env = environment(home, event)

    async def answer(call: HookCall) -> HookAnswer:
        payload = _payload(call)
        rc, out, err = await run(argv, payload, home, env, timeout_s)
        reason = err.decode("utf-8", "replace").strip()
        if rc == DENY_EXIT:
            return HookAnswer("deny", reason or "no reason given (exit 2, empty stderr)")
        if rc != 0:
            how = f"exit {rc}" if rc > 0 else f"killed by signal {-rc}"
            raise HookFailure(FAILED, f"it failed ({how}){': ' + reason[:_SHOWN] if reason else ''}")
        text = out.strip()
        if not text:
            return HookAnswer()
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            shown = text[:80].decode("utf-8", "replace")
            raise HookFailure(INVALID_OUTPUT, f"its stdout is not one JSON object ({shown!r}…)") from None
        return answer_from(data, event)

    return Hook(event, tool, name or " ".join(command), answer)


def _payload(call: HookCall) -> bytes:
    data = call.to_json()
    try:
        return orjson.dumps(data)
    except TypeError:  # an integer beyond 64 bits: the stdlib writes it exactly
        import json

        return json.dumps(data, ensure_ascii=False).encode()


async def run(argv: list[str], payload: bytes, cwd: Path, env: dict[str, str],
              timeout_s: float) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, stderr) of `argv` fed `payload`; HookFailure when it cannot start, passes
    `timeout_s` (its process group is killed first) or writes more than STDOUT_LIMIT."""
    try:
        proc = await spawn(*argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                           stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env)
    except OSError as exc:
        raise HookFailure(FAILED, f"it could not start ({argv[0]}: {exc.strerror or exc})") from None
    try:
        async with asyncio.timeout(timeout_s):
            out, err, _ = await asyncio.gather(_read(proc, proc.stdout, STDOUT_LIMIT),
                                               _read(proc, proc.stderr, STDERR_LIMIT), _feed(proc, payload))
            rc = await proc.wait()
    except TimeoutError:
        kill_group(proc.pid)
        await _reap(proc)
        raise HookFailure(TIMEOUT, f"it did not answer within {timeout_s:g} s; its processes were killed") from None
    except BaseException:
        kill_group(proc.pid)
        raise
    kill_group(proc.pid)  # whatever it left running in its group
    if len(out) > STDOUT_LIMIT:
        raise HookFailure(INVALID_OUTPUT, f"it wrote more than {STDOUT_LIMIT} bytes on stdout")
    return rc, out, err[:STDERR_LIMIT]


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Wait for the killed program, but not forever: a process that left the group (setsid) may still hold
    its pipes, and asyncio's `wait` also waits for them; then the pipes are closed from this side."""
    try:
        async with asyncio.timeout(_REAP_S):
            await proc.wait()
    except TimeoutError:
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()


async def _read(proc: asyncio.subprocess.Process, stream: Any, limit: int) -> bytes:
    try:
        data = bytes(await stream.readexactly(limit + 1))
    except asyncio.IncompleteReadError as short:
        return bytes(short.partial)
    kill_group(proc.pid)  # over the limit: stop it now rather than wait for it to fill the pipe
    return data


async def _feed(proc: asyncio.subprocess.Process, payload: bytes) -> None:
    stdin = proc.stdin
    assert stdin is not None
    try:
        stdin.write(payload)
        await stdin.drain()
        stdin.close()
    except (BrokenPipeError, ConnectionResetError):  # the hook answered without reading: its right
        pass


def profile_hooks(specs: Iterable[Any], home: Path) -> list[Hook]:
    """The Profile's `hooks` entries (`catalog.profile.HookSpec`) as hooks, in file order."""
    return [executable_hook(s.event, s.tool, list(s.command), s.timeout_s, home, s.name) for s in specs]
