"""Script tools: `<home>/tools/script/<name>/` and `<home>/tools/ext/<name>/` folders as tools.

Each folder holds a `tool.json` (Agenvoy's format, `script_loader.py`) and an entry script
(`script.js`, `script.py` or `script.sh`). A script folder gives the tool `script/<name>:<name>`
called `script_<name>`; an ext folder gives `script/ext/<name>:<name>` called `ext_<name>`.

A call runs the entry inside the sandboxed shell (`tooldeck.shell`), never on the host: the script's
folder is mounted read-only at `/.tool`, the workspace roots as for `workspace.shell`, the working
directory is the workspace root. The validated arguments are given as JSON on stdin (bash reads it
as usual) and in the environment variable `TOOLDECK_ARGS` (the sandbox's `python3` and `node` have
no stdin API: a Python script reads `os.environ["TOOLDECK_ARGS"]`, a JS one `process.env.TOOLDECK_ARGS`).
stdout is the result (kept as structured when it is JSON); a non-zero exit, or stderr with no stdout,
is `script.failed`; the time limit is `script.timeout`, and the shell's worker pool stops the work.

The folders are rescanned by stat at every invocation (`descriptors()`): unchanged files are not read
again and give the same descriptor objects, so the snapshot is reused; an added, changed or removed
tool gives new descriptors, hence a new snapshot, and `tooldeck serve`'s catalog check sees it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooldeck.catalog.sources import CallContext, Diagnostic, Executable, ToolSource
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import SourceKind, ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.sources import authoring
from tooldeck.sources import skills as skill_scopes
from tooldeck.sources.script_loader import DUPLICATE, Loaded, ScriptFolder, ScriptSpec
from tooldeck.sources.skill_loader import SkillFolder

if TYPE_CHECKING:
    from tooldeck.gate import GateTable

SCRIPT_FAILED = "script.failed"
SCRIPT_TIMEOUT = "script.timeout"
SCRIPT_CANCELLED = "script.cancelled"
SCRIPT_UNAVAILABLE = "script.unavailable"
TOOL_MOUNT = ".tool"
"""The script's folder is mounted read-only at `/.tool` in the sandbox."""
DISPATCH_MARGIN_S = 3.0
"""The script stops this long before the dispatch timeout, so it reports its own timeout."""
MAX_STDOUT_BYTES = 1024 * 1024
"""A script's stdout is kept up to this size (bashkit's own cap on one command's output); the projection
spills a long result to tool-results/."""
MAX_ARGS_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Tool:
    descriptor: ToolDescriptor
    spec: ScriptSpec
    folder: Path
    entry: str
    runtime: str


@dataclass(frozen=True, slots=True)
class _Kind:
    folder: ScriptFolder
    prefix: str
    """`script` or `ext`: the call-name prefix."""

    def tool_id(self, name: str) -> ToolId:
        return ToolId.script(name if self.prefix == "script" else f"ext/{name}", name)


class ScriptSource(ToolSource):
    """The `script` source: script tools and ext tools of one home, and `run_skill` over its skills
    (`sources/skills.py`)."""

    kind: SourceKind = "script"

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self._kinds = (_Kind(ScriptFolder(self.home / "tools" / "script"), "script"),
                       _Kind(ScriptFolder(self.home / "tools" / "ext"), "ext"))
        self.skills = skill_scopes.RunSkills(SkillFolder(self.home / skill_scopes.SKILLS_ROOT))
        self._run_skill: ToolDescriptor | None = None
        self._skill_diagnostics: list[Diagnostic] = []
        self.authoring = authoring.Authoring(self.home)
        self._authoring_on = False
        self._tools: dict[ToolId, _Tool] = {}
        self._descriptors: list[ToolDescriptor] = []
        self._diagnostics: list[Diagnostic] = []
        self._scanned = False
        self._lock = threading.Lock()
        self._tools_root = os.fspath(self.home / "tools")
        self._skills_root = os.fspath(self.skills.home.root)
        self._scan()

    @property
    def reads(self) -> int:
        """tool.json files read so far (unchanged files are never re-read)."""
        return sum(k.folder.reads for k in self._kinds) + self.skills.home.reads

    # -- the port ---------------------------------------------------------------------------------
    def descriptors(self) -> list[ToolDescriptor]:
        with self._lock:  # `tooldeck serve`'s catalog check and invocations may scan at once
            self._scan()
            return self._descriptors

    def diagnostics(self) -> list[Diagnostic]:
        return list(self._diagnostics)

    def resolve(self, tool_id: ToolId) -> Executable | None:
        if tool_id == skill_scopes.RUN_SKILL_ID:
            return Executable(self.skills.run_skill) if self._run_skill is not None else None
        if tool_id in authoring.IDS:
            if not self._authoring_on:
                return None
            fn = getattr(self.authoring, tool_id.name)
            return Executable(fn, blocking=tool_id.name in ("edit_tool", "edit_skill"))
        tool = self._tools.get(tool_id)
        if tool is None:
            return None
        return Executable(lambda args, ctx, t=tool: _call(t, args, ctx))

    def prepare_gate(self, table: GateTable) -> None:
        """`always_allow: true` makes the tool `allow` when the Profile names no permission for it itself (its
        `default_permission` may be `ask`); a `timeout` longer than the Profile's default tool timeout raises
        the dispatch timeout to it (plus a margin) unless the Profile sets one for the tool."""
        profile = table.profile
        for entry in table.entries.values():
            explicit = profile is not None and profile.first_match(profile.permissions, entry.tool_id) is not None
            if entry.binding.descriptor.id in authoring.IDS:
                if not explicit and entry.permission == "allow":
                    entry.permission = "ask"  # authoring tools write the home or run code: ask by default
                continue
            tool = self._tools.get(entry.binding.descriptor.id)
            if tool is None:
                continue
            if tool.spec.always_allow and not explicit and entry.permission == "ask":
                entry.permission = "allow"
            timed = profile is not None and profile.first_match(profile.tool_timeouts, entry.tool_id) is not None
            if tool.spec.timeout_s is not None and not timed:
                entry.timeout_s = max(entry.timeout_s, tool.spec.timeout_s + DISPATCH_MARGIN_S)

    # -- scanning ---------------------------------------------------------------------------------
    def _scan(self) -> None:
        if self._scanned and not self._descriptors and not self._diagnostics and not os.path.isdir(self._tools_root) \
                and not os.path.isdir(self._skills_root):
            return  # a home with no tools/ and no skills/: two stats per invocation
        results = [(kind, *kind.folder.scan()) for kind in self._kinds]
        skills_changed = self._scan_skills()
        authoring_on = os.path.isdir(self._tools_root)
        authoring_changed, self._authoring_on = authoring_on != self._authoring_on, authoring_on
        if self._scanned and not skills_changed and not authoring_changed \
                and not any(changed for _, _, changed in results):
            return
        self._scanned = True
        tools: dict[ToolId, _Tool] = {}
        diagnostics: list[Diagnostic] = []
        for kind, loaded, _ in results:
            for item in loaded:
                if item.diagnostic is not None:
                    diagnostics.append(item.diagnostic)
                    continue
                tool = self._tool(kind, item)
                if tool.descriptor.id in tools:
                    diagnostics.append(Diagnostic(DUPLICATE, f"{item.folder / 'tool.json'}: the name "
                                                  f"{item.spec.name!r} is already used by "  # type: ignore[union-attr]
                                                  f"{tools[tool.descriptor.id].folder}; this folder is skipped",
                                                  str(tool.descriptor.id)))
                    continue
                tools[tool.descriptor.id] = tool
        old = self._tools
        # keep the very same descriptor objects for unchanged tools: the snapshot cache compares them
        self._tools = {tid: (old[tid] if tid in old and old[tid] == t else t) for tid, t in tools.items()}
        self._descriptors = [t.descriptor for t in self._tools.values()]
        if self._run_skill is not None:
            self._descriptors.append(self._run_skill)
        if self._authoring_on:
            self._descriptors.extend(authoring.DESCRIPTORS)
        self._diagnostics = [*diagnostics, *self._skill_diagnostics]

    def _scan_skills(self) -> bool:
        """Rescan the home's skills; True when `run_skill`'s descriptor changed (or came, or went)."""
        folder = self.skills.home
        if not os.path.isdir(self._skills_root):
            changed = self._run_skill is not None
            self._run_skill, self._skill_diagnostics = None, []
            return changed
        found, diagnostics, changed = folder.skills()
        if self._run_skill is None or changed:
            self._run_skill = skill_scopes.describe(found)
            self._skill_diagnostics = diagnostics
            return True
        return False

    @staticmethod
    def _tool(kind: _Kind, item: Loaded) -> _Tool:
        spec = item.spec
        assert spec is not None and item.entry is not None and item.runtime is not None
        descriptor = ToolDescriptor(
            id=kind.tool_id(spec.name), title=spec.name, description=spec.description,
            input_schema=spec.parameters, model_name=f"{kind.prefix}_{spec.name}",
            annotations=ToolAnnotations(mutating=True, concurrency_safe=spec.concurrent), requires=spec.requires,
        )
        return _Tool(descriptor, spec, item.folder, item.entry, item.runtime)


def command_for(runtime: str, entry: str, args: Any) -> str:
    """The shell command that runs `/.tool/<entry>` with `args` on stdin and in `TOOLDECK_ARGS`."""
    text = json.dumps(args, ensure_ascii=True, separators=(",", ":"))
    mark = f"TOOLDECK_ARGS_{uuid.uuid4().hex}"
    return (f"TOOLDECK_ARGS={shlex.quote(text)} {runtime} /{TOOL_MOUNT}/{entry} <<'{mark}'\n"
            f"{text}\n{mark}\n")


def _limits(timeout_s: float | None, ctx: CallContext) -> Any:
    from tooldeck.shell import ShellLimits
    from tooldeck.workspace.store import MAX_FILE_BYTES

    profile = ctx.invocation.profile
    dispatch = profile.timeout_for(str(ctx.tool_id))
    if timeout_s is not None and profile.first_match(profile.tool_timeouts, str(ctx.tool_id)) is None:
        dispatch = max(dispatch, timeout_s + DISPATCH_MARGIN_S)
    wanted = timeout_s if timeout_s is not None else dispatch
    timeout = min(wanted, max(dispatch - DISPATCH_MARGIN_S, dispatch / 2))
    return ShellLimits(timeout_s=timeout, max_file_bytes=MAX_FILE_BYTES, max_stdout_bytes=MAX_STDOUT_BYTES,
                       max_command_bytes=3 * MAX_ARGS_BYTES)


async def _call(tool: _Tool, args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    return await run_entry(tool.folder, tool.entry, tool.runtime, tool.spec.timeout_s, args, ctx)


async def run_entry(folder: Path, entry: str, runtime: str, timeout_s: float | None, args: Any,
                    ctx: CallContext) -> ToolOutput:
    """Run `folder/entry` in the sandboxed shell (the folder read-only at `/.tool`, the run's workspace
    roots as for `workspace_shell`) with `args` as JSON on stdin and in `TOOLDECK_ARGS`."""
    from tooldeck.shell import Layout, ShellRun
    from tooldeck.shell.layout import Mount
    from tooldeck.workspace.paths import PathPolicy
    from tooldeck.workspace.store import for_run

    name = ctx.call_name
    size = len(json.dumps(args, ensure_ascii=True))
    if size > MAX_ARGS_BYTES:
        return ToolOutput.error(SCRIPT_FAILED, f"{name}: the arguments are {size} bytes of JSON; a script tool takes "
                                f"at most {MAX_ARGS_BYTES}. Pass a workspace file path instead of the content.")
    if not (folder / entry).is_file():
        return ToolOutput.error(SCRIPT_UNAVAILABLE, f"{name}: {folder / entry} is gone; the tool is "
                                "currently unavailable, no action was taken.")
    profile = ctx.invocation.profile
    policy = PathPolicy.from_roots(profile.workspace)
    layout = Layout(ctx.run.workspace_root, policy, for_run(ctx.run).views.mounts(),
                    (Mount(TOOL_MOUNT, folder, False),))
    limits = _limits(timeout_s, ctx)
    run = ShellRun(layout, limits, "/")
    try:
        result = await run.arun(command_for(runtime, entry, args))
    except asyncio.CancelledError:
        ctx.turn.outputs[ctx.index] = _output(name, run.cancelled_result(), limits.timeout_s)
        raise
    return _output(name, result, limits.timeout_s)


def _output(name: str, result: Any, timeout_s: float) -> ToolOutput:
    from tooldeck.shell import Status

    out, err = result.stdout.strip(), result.stderr.strip()
    if result.status is Status.EXITED and result.exit_code == 0 and (out or not err):
        raw = {"stderr": err} if err else None
        # bashkit stops a command's output at 1 MiB without always flagging it: a full buffer means it was cut
        if result.truncated or len(result.stdout.encode("utf-8", "surrogatepass")) >= MAX_STDOUT_BYTES:
            return ToolOutput(f"{out}\n[the script's output was cut at {MAX_STDOUT_BYTES // 1024} KiB: write large "
                              "results to a workspace file and print its path]", None, raw=raw)
        return ToolOutput(out, _structured(out), raw=raw)
    if result.status is Status.TIMED_OUT:
        return ToolOutput.error(SCRIPT_TIMEOUT, f"{name}: the script was stopped after {timeout_s:g} s (its "
                                "`timeout` in tool.json, or the Profile's tool timeout)."
                                + (f"\nOutput so far:\n{out}" if out else "") + (f"\nstderr:\n{err}" if err else ""),
                                may_have_executed=True)
    if result.status is Status.CANCELLED:
        return ToolOutput.error(SCRIPT_CANCELLED, f"{name}: cancelled", may_have_executed=True)
    code = "none" if result.exit_code is None else str(result.exit_code)
    message = f"script error: {err or '(nothing on stderr)'}\n(exit code {code})"
    if out:
        message += f"\nstdout:\n{out}"
    return ToolOutput.error(SCRIPT_FAILED, message, {"error": {"code": SCRIPT_FAILED, "message": message},
                                                     "exit_code": result.exit_code, "stderr": err},
                            may_have_executed=True)


def _structured(text: str) -> Any:
    if not text or text[0] not in "[{\"-0123456789tfn":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None
