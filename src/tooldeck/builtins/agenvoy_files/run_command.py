"""`run_command`: Agenvoy's argv command, run in tooldeck's sandboxed shell (or, only where the Profile
allows host commands and the user confirms, on the host).

`argv[0]` must be a bare command name; `["sh", "-c", "…"]` (or bash) runs a script with pipes, redirects
and globs; `["cd", "<dir>"]` changes the folder later calls of this run start in. The sandbox is
`workspace_shell`'s (bashkit over the workspace roots: no host programs, files, environment or
network), so it never fails open. A non-zero exit is an answer, not an error: `<output>\\nError: exit
status N`.

`sandbox: false` is refused unless the Profile sets `host_commands = true`; then each such call is
`ask` (confirmed by the host), runs as a child process in its own session with a minimal environment
(PATH, HOME, LANG), cwd in the workspace, stdout and stderr together capped at 128 KiB, and the same
time limit as the shell. When the time runs out, or the call is cancelled, the whole process group is
sent SIGTERM, then SIGKILL after a grace period, and awaited: the work really stops.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
from typing import Any, Final

from tooldeck.builtins.agenvoy_files import descriptors
from tooldeck.builtins.agenvoy_files.common import (
    COMMAND_REFUSED,
    COMMAND_TIMEOUT,
    HOST_COMMANDS_OFF,
    in_family_words,
    workspace,
)
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.shell import limits_for
from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.process_group import kill_group, spawn
from tooldeck.workspace.names import shown
from tooldeck.workspace.paths import PathPolicy, parse_dir, parse_path

TOOL_ID = ToolId.builtin("run_command")
CWD_KEY: Final = "tooldeck.agenvoy_files.cwd"
MAX_OUTPUT_BYTES: Final = 128 * 1024
KILL_GRACE_S: Final = 1.0
HOST_ENV_KEYS: Final = ("PATH", "HOME", "LANG")
SHELLS: Final = frozenset(("sh", "bash"))


async def run_command(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    argv: list[str] = args["argv"]
    host = args.get("sandbox") is False
    profile = ctx.invocation.profile
    if host and not profile.host_commands:
        raise ToolCallError(HOST_COMMANDS_OFF, "sandbox: false is refused: this Profile does not allow host "
                            "commands (the host sets host_commands = true to allow them, each one confirmed); "
                            "run the command in the sandbox instead (omit sandbox)")
    _check_bare(argv[0])
    store, policy = workspace(ctx)
    if argv[0] == "cd":
        return _cd(argv, ctx, store, policy)
    if argv[0] == "rm" and not host:
        return _rm(argv, ctx, store, policy)
    _check_write_paths(args.get("write_paths") or [], policy)
    if args.get("network") and not host:
        raise ToolCallError(COMMAND_REFUSED, "network: true is not available: the sandbox has no network "
                            "(run_command is for local work); use http_request, fetch_page or download_file")
    cwd = ctx.run.state.get(CWD_KEY, "")
    if host:
        return await _host(argv, ctx, os.path.join(store.root, cwd))
    return await _sandboxed(argv, ctx, cwd)


def _check_bare(name: str) -> None:
    if "/" in name or "\\" in name:
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        raise ToolCallError(COMMAND_REFUSED, f'failed to run command: "{name}" must be a bare command name '
                            f'("{base}"), not a path')
    if not name.strip():
        raise ToolCallError(COMMAND_REFUSED, "failed to run command: argv[0] is empty; it must be a command name")


def _check_write_paths(paths: list[str], policy: PathPolicy) -> None:
    for raw in paths:
        if raw.startswith(("/", "~")):
            raise ToolCallError(COMMAND_REFUSED, f'write_paths needs workspace paths, got "{raw[:200]}"')
        rel = parse_path(raw)
        if not policy.is_writable(rel):
            raise ToolCallError(COMMAND_REFUSED, f"write path {shown(rel)} was not approved — only the writable "
                                f"folders can be written ({', '.join(policy.writable)})")


def _cd(argv: list[str], ctx: CallContext, store: Any, policy: PathPolicy) -> ToolOutput:
    if len(argv) > 2:
        raise ToolCallError(COMMAND_REFUSED, "cd takes at most one folder")
    target = argv[1] if len(argv) == 2 else "~"
    current = ctx.run.state.get(CWD_KEY, "")
    if target in ("~", "/", ""):
        rel = ""
    else:
        if target.startswith(("/", "~/")):
            joined = target[1:].lstrip("/")  # from the workspace root
        else:
            joined = f"{current}/{target}" if current else target
        rel = parse_dir(_normalize(joined))
    if rel:
        loc = store.locate(policy, rel)
        if store.kind(loc) != "directory":
            raise ToolCallError("workspace.path_not_found", f"cd: {shown(rel)} is not a folder of the workspace")
    ctx.run.state[CWD_KEY] = rel
    return ToolOutput(f"Changed working directory to: /{shown(rel)}", {"cwd": "/" + shown(rel)})


def _rm(argv: list[str], ctx: CallContext, store: Any, policy: PathPolicy) -> ToolOutput:
    """Agenvoy's `rm`: each file goes to the workspace trash (restorable with restore_file), not away."""
    from tooldeck.builtins.agenvoy_files import task
    from tooldeck.core.results import ToolEffect
    from tooldeck.workspace import effects

    force = any(a.startswith("-") and "f" in a for a in argv[1:] if a != "--")
    names = [a for a in argv[1:] if not a.startswith("-")]
    if not names:
        raise ToolCallError(COMMAND_REFUSED, "rm: name the files to remove")
    current = ctx.run.state.get(CWD_KEY, "")
    lines: list[str] = []
    removed: list[ToolEffect] = []
    failed = False
    for name in names:
        rel = name.lstrip("/") if name.startswith("/") else (f"{current}/{name}" if current else name)
        try:
            loc = store.locate(policy, _normalize(rel), write=True)
            entry = store.remove(loc)
        except ToolCallError as exc:
            if not (force and exc.code == "workspace.file_not_found"):
                lines.append(f"rm: {name}: {in_family_words(exc.message)}")
                failed = True
            continue
        task.touched(ctx).note_removed(loc.real_rel)
        removed.append(ToolEffect(effects.FILE_REMOVED, {"path": loc.shown, "sha256": entry.sha256,
                                                         "size": entry.size}))
        lines.append(f"removed: {loc.shown} (to the workspace trash; restore_file brings it back)")
    text = "\n".join(lines) + ("\nError: exit status 1" if failed else "")
    return ToolOutput(text, {"exit_code": 1 if failed else 0, "sandbox": True, "removed": len(removed)},
                      effects=removed)


def _normalize(path: str) -> str:
    """Resolve `..` within the workspace (never above its root)."""
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            if not parts:
                raise ToolCallError(COMMAND_REFUSED, "cd: that folder is above the workspace root")
            parts.pop()
        else:
            parts.append(seg)
    return "/".join(parts)


def script_of(argv: list[str]) -> str:
    """The bash text the sandbox runs for `argv`: the script of `sh -c`, else the words quoted."""
    if argv[0] in SHELLS and len(argv) >= 2 and argv[1] == "-c":
        if len(argv) < 3 or not argv[2].strip():
            raise ToolCallError(COMMAND_REFUSED, f"{argv[0]} -c: empty script")
        return argv[2]
    return shlex.join(argv)


def _combined(stdout: str, stderr: str) -> str:
    if stdout and stderr:
        return stdout.rstrip("\n") + "\n" + stderr
    return stdout or stderr


async def _sandboxed(argv: list[str], ctx: CallContext, cwd: str) -> ToolOutput:
    from tooldeck.shell import Layout, ShellRun, Status
    from tooldeck.workspace.store import for_run

    policy = PathPolicy.from_roots(ctx.invocation.profile.workspace)
    limits = limits_for(ctx)
    run = ShellRun(Layout(ctx.run.workspace_root, policy, for_run(ctx.run).views.mounts()), limits, "/" + cwd)
    script = script_of(argv)
    try:
        result = await run.arun(script)
    except asyncio.CancelledError:
        partial = run.cancelled_result()
        ctx.turn.outputs[ctx.index] = ToolOutput(_combined(partial.stdout, partial.stderr) + "\nError: cancelled",
                                                 {"cancelled": True}, is_error=True,
                                                 error_code="workspace.shell_cancelled", may_have_executed=True)
        raise
    output = _combined(result.stdout, result.stderr)
    if result.truncated:
        output += "\n[output truncated at 128 KiB]"
    structured = {"exit_code": result.exit_code, "sandbox": True, "truncated": result.truncated}
    if result.status is Status.TIMED_OUT:
        return ToolOutput(f"{output}\nError: timed out after {limits.timeout_s:g} s; the command was stopped",
                          structured, is_error=True, error_code=COMMAND_TIMEOUT, may_have_executed=True)
    if result.status is not Status.EXITED:
        return ToolOutput(f"{output}\nError: {result.error or result.status.value}".lstrip("\n"), structured,
                          is_error=True, error_code="workspace.shell_failed", may_have_executed=True)
    return ToolOutput(_answer(output, result.exit_code), structured)


def _answer(output: str, exit_code: int | None) -> str:
    if exit_code == 0:
        return output if output else "(no output)"
    return f"{output.rstrip(chr(10))}\nError: exit status {exit_code}".lstrip("\n")


# -- host commands ------------------------------------------------------------------------------------
async def _host(argv: list[str], ctx: CallContext, cwd: str) -> ToolOutput:
    timeout = limits_for(ctx).timeout_s
    env = {k: os.environ[k] for k in HOST_ENV_KEYS if k in os.environ}
    try:
        proc = await spawn(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                           stderr=asyncio.subprocess.STDOUT)
    except FileNotFoundError:
        raise ToolCallError(COMMAND_REFUSED, f'failed to run command: "{argv[0]}" is not found on the host') from None
    except PermissionError:
        raise ToolCallError(COMMAND_REFUSED, f'failed to run command: "{argv[0]}" is not executable') from None
    buf = bytearray()
    dropped = 0

    async def pump() -> None:
        nonlocal dropped
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            room = MAX_OUTPUT_BYTES - len(buf)
            buf.extend(chunk[:max(room, 0)])
            dropped += max(0, len(chunk) - max(room, 0))
        await proc.wait()

    try:
        await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        await _stop(proc)
        text = buf.decode("utf-8", "replace")
        return ToolOutput(f"{text}\nError: timed out after {timeout:g} s; the command and its children were stopped"
                          .lstrip("\n"), {"exit_code": None, "sandbox": False, "pid": proc.pid}, is_error=True,
                          error_code=COMMAND_TIMEOUT, may_have_executed=True)
    except asyncio.CancelledError:
        await asyncio.shield(_stop(proc))
        raise
    text = buf.decode("utf-8", "replace")
    if dropped:
        text += f"\n[output truncated at 128 KiB; {dropped:,} more bytes dropped]"
    return ToolOutput(_answer(text, proc.returncode), {"exit_code": proc.returncode, "sandbox": False,
                                                       "pid": proc.pid, "truncated": bool(dropped)})


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM to the process group, SIGKILL after the grace period, then wait for the process."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        kill_group(proc.pid, sig)
        if wait is None:
            break
        try:
            await asyncio.wait_for(proc.wait(), wait)
            break
        except TimeoutError:
            continue
    kill_group(proc.pid)  # children that outlived the leader
    await proc.wait()



DESCRIPTOR = descriptors.RUN_COMMAND
TOOLS = [BuiltinTool(DESCRIPTOR, run_command)]
