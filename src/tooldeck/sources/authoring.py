"""Authoring tools (Agenvoy's loop): `edit_tool`, `test_tool`, `edit_skill`, `run_script`.

Offered by the script source while `<home>/tools/` exists; permission `ask` unless the Profile names
the tool. Every write keeps the previous content under `<folder>/.history/` (tools: `<home>/tools/
.history/script/<name>/`, skills: `<home>/skills/.history/<path>`), and a removal moves the folder to
`.Trash/` beside it: nothing is ever deleted. Files are written to a temp file and renamed. A tool.json
or SKILL.md that would not load is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from tooldeck.catalog.sources import CallContext, Diagnostic
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput
from tooldeck.sources.script_loader import ENTRIES, NAME, parse_tool_json
from tooldeck.sources.skill_loader import SKILL_NAME, parse_skill_md

PROVIDER = "script/.authoring"
EDIT_INVALID = "script.edit_invalid"
NOT_FOUND = "script.tool_not_found"
NOOP = "script.edit_noop"
NO_MATCH = "script.patch_no_match"
AMBIGUOUS = "script.patch_ambiguous"
SKILL_EDIT_INVALID = "skill.edit_invalid"
SKILL_NOT_FOUND = "skill.not_found"
RUNTIMES = {".py": "python3", ".js": "node", ".mjs": "node", ".sh": "bash"}
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def _ts() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{uuid.uuid4().hex[:6]}"


def _write(path: Path, text: str, history: Path) -> None:
    """Keep the old content in `history`, then write `text` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        history.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, history / f"{_ts()}-{path.name}")
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _patch(old: str, args: dict[str, Any], what: str) -> str:
    needle, new = args.get("old_string") or "", args.get("new_string") or ""
    if not needle:
        raise ToolCallError(EDIT_INVALID, "patch needs a non-empty `old_string`")
    count = old.count(needle)
    if count == 0:
        raise ToolCallError(NO_MATCH, f"`old_string` is not in {what}; read it again and copy the text exactly")
    if count > 1 and not args.get("replace_all"):
        raise ToolCallError(AMBIGUOUS, f"`old_string` is in {what} {count} times; add more context or set "
                            "`replace_all`")
    return old.replace(needle, new) if args.get("replace_all") else old.replace(needle, new, 1)


def _mode(args: dict[str, Any]) -> str:
    mode = args.get("mode")
    if mode:
        return str(mode)
    if args.get("content") is not None:
        return "write"
    if args.get("old_string") is not None:
        return "patch"
    raise ToolCallError(EDIT_INVALID, "say `mode`: write (with `content`), patch (with `old_string` and "
                        "`new_string`) or remove")


class Authoring:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.scripts = home / "tools" / "script"
        self.skills = home / "skills"

    # -- edit_tool --------------------------------------------------------------------------------------
    def edit_tool(self, args: dict[str, Any], ctx: CallContext) -> str:
        name = str(args.get("name", ""))
        if not NAME.match(name):
            raise ToolCallError(EDIT_INVALID, f"name {name!r} must be 1-48 letters, digits, `_` or `-` (no "
                                "`script_` prefix)")
        folder = self.scripts / name
        mode = _mode(args)
        if mode == "remove":
            if not folder.is_dir():
                raise ToolCallError(NOT_FOUND, f'tool "{name}" does not exist')
            trash = self.scripts / ".Trash"
            trash.mkdir(parents=True, exist_ok=True)
            os.replace(folder, trash / f"{name}-{_ts()}")
            return f"removed tool {name} (moved to tools/script/.Trash/); script_{name} goes away at the next turn"
        tag = args.get("tag")
        if tag not in ("json", "script"):
            raise ToolCallError(EDIT_INVALID, f"tag must be 'json' or 'script', got {tag!r}")
        if tag == "json":
            path = folder / "tool.json"
        else:
            path = next((folder / f for f, _ in ENTRIES if (folder / f).is_file()), folder / "script.py")
        if mode == "write":
            content = args.get("content")
            if not isinstance(content, str):
                raise ToolCallError(EDIT_INVALID, "write needs `content`")
            text = content
        elif mode == "patch":
            if not path.is_file():
                raise ToolCallError(NOT_FOUND, f'tool "{name}" does not exist' if not folder.is_dir()
                                    else f"{path.name} of tool {name} does not exist; write it first")
            old = path.read_text(encoding="utf-8")
            text = _patch(old, args, path.name)
            if text == old:
                raise ToolCallError(NOOP, "no edit needed: the new text equals the old")
        else:
            raise ToolCallError(EDIT_INVALID, f"mode must be write, patch or remove, got {mode!r}")
        if tag == "json":
            parsed = parse_tool_json(text.encode("utf-8", "surrogatepass"), str(path))
            if isinstance(parsed, Diagnostic):
                raise ToolCallError(EDIT_INVALID, f"{parsed.message.replace(str(path), 'tool.json')}; nothing "
                                    "was written")
            if parsed.name != name:
                raise ToolCallError(EDIT_INVALID, f"tool.json's name is {parsed.name!r} but the tool is {name!r}; "
                                    "they must be the same; nothing was written")
        _write(path, text, self.home / "tools" / ".history" / "script" / name)
        return f"wrote tools/script/{name}/{path.name} ({len(text)} characters); test it with test_tool, it is " \
               f"callable as script_{name} from the next turn"

    # -- test_tool --------------------------------------------------------------------------------------
    async def test_tool(self, args: dict[str, Any], ctx: CallContext) -> ToolOutput:
        from tooldeck.sources.scripts import run_entry

        name = str(args.get("name", ""))
        folder = self.scripts / name
        entry = next(((f, rt) for f, rt in ENTRIES if (folder / f).is_file()), None) if NAME.match(name) else None
        if entry is None:
            return ToolOutput.error(NOT_FOUND, f"script not found: {folder / 'script.py'}")
        raw = args.get("input", "{}")
        try:
            payload = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError as exc:
            return ToolOutput.error(EDIT_INVALID, f"`input` is not JSON ({exc}); give the arguments as a JSON "
                                    "object text, e.g. {\"city\": \"Paris\"}")
        spec = None
        with contextlib.suppress(OSError):
            spec = parse_tool_json((folder / "tool.json").read_bytes(), str(folder / "tool.json"))
        own = getattr(spec, "timeout_s", None)
        # the tool.json timeout, kept under test_tool's own dispatch timeout (which it does not raise)
        limit = ctx.invocation.profile.timeout_for(str(ctx.tool_id)) - 3.0
        timeout = None if own is None else min(own, max(limit, 1.0))
        return await run_entry(folder, entry[0], entry[1], timeout, payload if payload is not None else {}, ctx)

    # -- edit_skill -------------------------------------------------------------------------------------
    def _skill_path(self, raw: Any) -> Path:
        text = str(raw or "").strip()
        parts = text.rstrip("/").split("/") if text else []
        if not parts or text.startswith("/") or any(not _SEGMENT.match(p) for p in parts):
            raise ToolCallError(SKILL_EDIT_INVALID, f"path {raw!r} must be relative under skills/, like "
                                "`pdf/SKILL.md`: segments of letters, digits, `_`, `-`, `.`, none starting with `.`")
        if not SKILL_NAME.match(parts[0]):
            raise ToolCallError(SKILL_EDIT_INVALID, f"the skill folder {parts[0]!r} must be 1-64 of a-z, 0-9, `-`, `_`")
        path = self.skills.joinpath(*parts)
        for parent in [self.skills, *reversed(path.parents)]:
            if parent.is_symlink():
                raise ToolCallError(SKILL_EDIT_INVALID, f"{parent} is a symbolic link; refused")
        if path.is_symlink():
            raise ToolCallError(SKILL_EDIT_INVALID, f"{path} is a symbolic link; refused")
        return path

    def edit_skill(self, args: dict[str, Any], ctx: CallContext) -> str:
        if args.get("mode") == "remove" or (args.get("name") and args.get("path") is None
                                            and args.get("content") is None and args.get("old_string") is None):
            name = str(args.get("name", ""))
            if not SKILL_NAME.match(name) or not (self.skills / name).is_dir():
                raise ToolCallError(SKILL_NOT_FOUND, f'skill "{name}" does not exist')
            trash = self.skills / ".Trash"
            trash.mkdir(parents=True, exist_ok=True)
            os.replace(self.skills / name, trash / f"{name}-{_ts()}")
            return f"removed skill {name} (moved to skills/.Trash/)"
        path = self._skill_path(args.get("path"))
        mode = _mode(args)
        rel = path.relative_to(self.skills).as_posix()
        if mode == "write":
            content = args.get("content")
            if not isinstance(content, str):
                raise ToolCallError(SKILL_EDIT_INVALID, "write needs `content`")
            text = content
        elif mode == "patch":
            if not path.is_file():
                raise ToolCallError(SKILL_NOT_FOUND, f"skills/{rel} does not exist; write it first")
            old = path.read_text(encoding="utf-8")
            text = _patch(old, args, f"skills/{rel}")
            if text == old:
                raise ToolCallError(NOOP, "no edit needed: the new text equals the old")
        else:
            raise ToolCallError(SKILL_EDIT_INVALID, f"mode must be write, patch or remove, got {mode!r}")
        if path.name == "SKILL.md" and path.parent.parent == self.skills:
            parsed = parse_skill_md(text.encode("utf-8", "surrogatepass"), f"skills/{rel}", path.parent.name)
            if isinstance(parsed, Diagnostic):
                raise ToolCallError(SKILL_EDIT_INVALID, f"{parsed.message}; nothing was written")
        _write(path, text, (self.skills / ".history").joinpath(*Path(rel).parent.parts))
        return f"wrote skills/{rel} ({len(text)} characters)"

    # -- run_script -------------------------------------------------------------------------------------
    async def run_script(self, args: dict[str, Any], ctx: CallContext) -> ToolOutput:
        from tooldeck.sources.scripts import run_entry
        from tooldeck.workspace.paths import PathPolicy, parse_dir

        raw = str(args.get("path", ""))
        rel = parse_dir(raw.strip().lstrip("/") or None) or ""
        policy = PathPolicy.from_roots(ctx.invocation.profile.workspace)
        policy.check_visible(rel)
        runtime = RUNTIMES.get(Path(rel).suffix)
        if runtime is None:
            return ToolOutput.error(EDIT_INVALID, f"{raw}: run_script runs .py, .js, .mjs or .sh files")
        host = Path(ctx.run.workspace_root) / rel
        if host.is_symlink() or not host.is_file() or any(p.is_symlink() for p in host.parents):
            return ToolOutput.error(NOT_FOUND, f"script not found: {rel}")
        raw_input = args.get("input", "{}")
        try:
            payload = json.loads(raw_input) if isinstance(raw_input, str) else raw_input
        except ValueError as exc:
            return ToolOutput.error(EDIT_INVALID, f"`input` is not JSON ({exc})")
        return await run_entry(host.parent, host.name, runtime, None, payload if payload is not None else {}, ctx)


def _descriptor(name: str, description: str, properties: dict[str, Any], required: list[str],
                annotations: ToolAnnotations) -> ToolDescriptor:
    return ToolDescriptor(id=ToolId(PROVIDER, name), title=name, description=description, model_name=name,
                          input_schema={"type": "object", "properties": properties, "required": required,
                                        "additionalProperties": False},
                          annotations=annotations)


_EDIT = {
    "mode": {"type": "string", "enum": ["write", "patch", "remove"],
             "description": "write (with content), patch (old_string → new_string) or remove; inferred from "
                            "content / old_string when omitted (remove never is)."},
    "content": {"type": "string", "description": "The whole new file (write)."},
    "old_string": {"type": "string", "description": "Text to replace, copied exactly (patch)."},
    "new_string": {"type": "string", "description": "The replacement (patch)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string (patch)."},
}
_MUTATING = ToolAnnotations(mutating=True)
DESCRIPTORS = (
    _descriptor("edit_tool", "Create, change or remove a script tool in tools/script/<name>/: tag `json` is its "
                "tool.json ({name, description, parameters (JSON Schema), timeout, always_allow, concurrent}), "
                "tag `script` its script.py (it reads its arguments with json.loads(os.environ['TOOLDECK_ARGS']) "
                "and prints one JSON object). A tool.json that would not load is refused. The tool is callable as "
                "script_<name> from the next turn; run it first with test_tool.",
                {"name": {"type": "string", "description": "The tool's name, without the script_ prefix."},
                 "tag": {"type": "string", "enum": ["json", "script"]}, **_EDIT}, ["name"], _MUTATING),
    _descriptor("test_tool", "Run a script tool of tools/script/<name>/ in the sandbox with the given input, even "
                "before it is callable. Returns its trimmed stdout, or `script error: <stderr>`.",
                {"name": {"type": "string"},
                 "input": {"type": "string", "default": "{}", "description": "The arguments as a JSON object text."}},
                ["name"], _MUTATING),
    _descriptor("edit_skill", "Create, change or remove a skill file under skills/ (the home's skills): `path` "
                "like `pdf/SKILL.md` or `pdf/scripts/x.js`. SKILL.md needs front matter with name (the folder's "
                "name) and description; one that would not load is refused. Remove takes `name` (the skill).",
                {"path": {"type": "string"}, "name": {"type": "string", "description": "The skill to remove."},
                 **_EDIT}, [], _MUTATING),
    _descriptor("run_script", "Run a script file of the workspace (.py, .js, .mjs or .sh) once in the sandbox, "
                "with `input` as JSON on stdin and in TOOLDECK_ARGS. Returns its trimmed stdout, or `script "
                "error: <stderr>`.",
                {"path": {"type": "string", "description": "Workspace path, e.g. scratch/probe.py."},
                 "input": {"type": "string", "default": "{}"}}, ["path"], _MUTATING),
)
IDS = frozenset(d.id for d in DESCRIPTORS)
