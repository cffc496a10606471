"""`workspace.shell`: run a bash command in the sandboxed shell over the run's workspace."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.workspace.names import shown
from tooldeck.workspace.paths import PathPolicy, parse_dir

if TYPE_CHECKING:
    from tooldeck.shell import ShellLimits, ShellResult

# The shell engine (bashkit, the worker pool) is imported when a command runs, not when the Runtime
# loads this family for its descriptor: a `tooldeck call dice_roll` never pays for it (docs/cli.md).

TOOL_ID = ToolId.builtin("workspace.shell")
SHELL_EXIT = "workspace.shell_exit"
SHELL_TIMEOUT = "workspace.shell_timeout"
SHELL_CANCELLED = "workspace.shell_cancelled"
SHELL_FAILED = "workspace.shell_failed"
DISPATCH_MARGIN_S = 3.0
"""The shell stops this long before the dispatch timeout, so it reports its own timeout."""
MAX_COMMAND_CHARS = 128 * 1024


def limits_for(ctx: CallContext) -> ShellLimits:
    """The Profile's `shell_timeout_s`, kept under the tool's dispatch timeout."""
    from tooldeck.shell import ShellLimits
    from tooldeck.workspace.store import MAX_FILE_BYTES

    profile = ctx.invocation.profile
    dispatch_timeout = profile.timeout_for(str(ctx.tool_id))
    timeout = min(profile.shell_timeout_s, max(dispatch_timeout - DISPATCH_MARGIN_S, dispatch_timeout / 2))
    return ShellLimits(timeout_s=timeout, max_file_bytes=MAX_FILE_BYTES)


def vfs_workdir(raw: Any, policy: PathPolicy) -> str:
    """`/`, ``, `.` → `/`; `output/x` or `/output/x` → `/output/x` (must be under a visible root)."""
    text = raw if isinstance(raw, str) else "/"
    stripped = text.strip().lstrip("/")
    rel = parse_dir(stripped or None)
    if not rel:
        return "/"
    policy.check_visible(rel)
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8 (`\u{DCxx}`): the sandbox sees UTF-8 names only
        raise ToolCallError(SHELL_FAILED, f"Command failed.\nworkdir `{shown(rel)}` is not a folder in the shell: "
                            "its name is not UTF-8, and the shell shows only UTF-8 names. Use `/` (the workspace "
                            "root) or a folder whose name is UTF-8.") from None
    return "/" + rel


def header(result: ShellResult) -> str:
    from tooldeck.shell import Status

    if result.status is Status.TIMED_OUT:
        return "Command timed out."
    if result.status is Status.CANCELLED:
        return "Command cancelled."
    if result.exit_code is None:
        return "Command failed."
    return f"Exit code: {result.exit_code}"


def to_output(result: ShellResult, timeout_s: float) -> ToolOutput:
    from tooldeck.shell import Status
    from tooldeck.shell.output import render

    content = render(header(result), result.stdout, result.stderr, result.truncated)
    structured = {"exit_code": result.exit_code, "output_truncated": result.truncated}
    if result.status is Status.EXITED and result.exit_code == 0:
        return ToolOutput(content, structured)
    if result.status is Status.TIMED_OUT:
        code = SHELL_TIMEOUT
        content += (f"\nThe shell stops a command after {timeout_s:g} s. Split the work into smaller steps, or use "
                    "`background_command` for long jobs when it is available.")
    elif result.status is Status.CANCELLED:
        code = SHELL_CANCELLED
    elif result.status is Status.FAILED:
        code = SHELL_FAILED
    else:
        code = SHELL_EXIT
    return ToolOutput(content, structured, is_error=True, error_code=code,
                      may_have_executed=result.status is not Status.EXITED)


async def handle(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.shell import Layout, ShellRun
    from tooldeck.workspace.store import for_run

    profile = ctx.invocation.profile
    policy = PathPolicy.from_roots(profile.workspace)
    workdir = vfs_workdir(args.get("workdir", "/"), policy)
    limits = limits_for(ctx)
    layout = Layout(ctx.run.workspace_root, policy, for_run(ctx.run).views.mounts())
    run = ShellRun(layout, limits, workdir)
    try:
        result = await run.arun(args["command"])
    except asyncio.CancelledError:
        # The host cancelled the turn; the call's work stops within `stop_grace_s` (see ShellRun.arun).
        # Its outcome is known (cancelled, with the output so far), so the records keep it instead of
        # outcome_unknown.
        ctx.turn.outputs[ctx.index] = to_output(run.cancelled_result(), limits.timeout_s)
        raise
    return to_output(result, limits.timeout_s)


DESCRIPTOR = ToolDescriptor(
    id=TOOL_ID,
    title="Run a shell command",
    description=(
        "Run a bash command in a sandbox over the workspace and return its exit code, stdout and stderr. `/` is "
        "the workspace root: the writable folders (output/, scratch/, plan/, summaries/, persist/ by default) and "
        "the read-only tool-results/ and skills/ are there; nothing of the host is (no host programs, files, "
        "environment or network). Files written persist to later calls; variables, functions and the current "
        "directory do not. Available: bash builtins and coreutils-style commands (grep, sed, awk, find, xargs, "
        "sort, diff, patch, tar, jq, yq, ...), `python3` (a Python subset with json, re, collections, itertools, "
        "dataclasses; no class inheritance or generators) and `node`/`js` (real JavaScript with ES modules; "
        "`js --help`). No git, pip, npm or compilers. Each call has a time limit (30 s by default), stdout and "
        "stderr are capped at 128 KiB each, and no file may grow past 64 MiB. Recursive commands over thousands of "
        "files are slow (about 1 s per 3,000 files); prefer the workspace search tool for searching the whole "
        "workspace."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "maxLength": MAX_COMMAND_CHARS,
                        "description": "The bash command or script to run."},
            "workdir": {"type": "string", "default": "/",
                        "description": "Folder to start in, relative to the workspace root (e.g. `output`); "
                                       "default `/`, the workspace root."},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, handle)]
