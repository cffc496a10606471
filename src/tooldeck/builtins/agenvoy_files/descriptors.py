"""The descriptors of Agenvoy's file family, in one light module: the catalog loads these when a Runtime
starts, and each tool's module (its handler and what it imports) only on the tool's first call
(`agenvoy_files.tools`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId

FIND_MODES: Final = ("list", "glob", "search")
PAGE: Final = 256
MAX_CONTEXT: Final = 10
MAX_FILES: Final = 50
EDIT_MODES: Final = ("write", "patch")
HISTORY_MODES: Final = ("list", "read")
MAX_LIMIT: Final = 24


# -- find_files ------------------------------------------------------------------------------------
QUERY = {
    "type": "object",
    "properties": {
        "dir": {"type": "string", "description": "Folder to look in, workspace-relative (default `.`: every "
                                                 "visible folder)."},
        "pattern": {"type": "string", "description": "glob: a file glob (`**/*.md`, `*.{py,txt}`; without `/` it "
                                                     "matches names at any depth). search: an RE2 regular "
                                                     "expression matched against each line."},
        "file_pattern": {"type": "string", "description": "search: the files to look in, a glob (default `**/*`)."},
        "recursive": {"type": "boolean", "description": "list: also list subfolders (default false)."},
    },
    "additionalProperties": False,
}

FIND_FILES = ToolDescriptor(
    id=ToolId.builtin("find_files"),
    title="Find workspace files",
    description="List folders, find files by glob, or search file contents, several queries at once. mode: list | "
    "glob | search; when omitted, a query with pattern and file_pattern searches, one with pattern globs, else it "
    "lists. list answers {dir: [entries]} (folders end with `/`); glob answers paths, newest first; search answers "
    "`path:row: line` (output=content, with `context` rows around) or the files with their match counts "
    "(output=files). Results come in pages of at most 256 (`offset`, `limit`). Skips .git, node_modules, vendor, "
    "dist, build and editor folders. A glob of only `*`, `/`, `.`, `?` is refused: it narrows nothing. Paths are "
    "workspace-relative (writable: output/, scratch/, plan/, summaries/, persist/; read-only: tool-results/, "
    "skills/).",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "list | glob | search (inferred when "
                                                                            "omitted)."},
            "queries": {"type": "array", "items": QUERY, "minItems": 1, "maxItems": 20},
            "output": {"type": "string", "enum": ["content", "files"], "description": "search: matching lines "
                                                                                     "(default) or files."},
            "context": {"type": "integer", "minimum": 0, "maximum": MAX_CONTEXT,
                        "description": "search, output=content: rows shown before and after each match."},
            "offset": {"type": "integer", "minimum": 0, "description": "glob/search: results to skip (paging)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": PAGE, "description": "glob/search: results per "
                                                                                        "page (default 256)."},
        },
        "required": ["queries"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True, idempotent=True),
)


# -- read_files ------------------------------------------------------------------------------------
FILE_ITEM = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Workspace path, e.g. `output/main.md`."},
        "offset": {"type": "integer", "minimum": 1, "description": "First row (text, CSV), page (PDF) to show, "
                                                                   "1-based."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many rows or pages (default: 2,048 rows, "
                                                                  "every page)."},
    },
    "required": ["path"],
    "additionalProperties": False,
}

READ_FILES = ToolDescriptor(
    id=ToolId.builtin("read_files"),
    title="Read workspace files",
    description="Read several files at once; answers a JSON object {path: content} where a file that cannot be read "
    "has \"error: …\" instead (the others still come back). Text (up to 1 MB) comes as numbered rows (number, tab, "
    "text; the number is not part of the file), 2,048 rows at a time: `offset` is the first row, and a cut file "
    "says which offset comes next. PDF comes as `--- page i/N ---` chunks (offset/limit in pages), DOCX as its "
    "text, CSV/TSV one row a line as a JSON array, images (PNG, JPEG, GIF, WebP up to 10 MB) as image content "
    "for clients that take images. Read a file before edit_file overwrites or patches it. Paths are "
    "workspace-relative (writable: output/, scratch/, plan/, summaries/, persist/; read-only: tool-results/, "
    "skills/).",
    input_schema={
        "type": "object",
        "properties": {"files": {"type": "array", "items": FILE_ITEM, "minItems": 1, "maxItems": MAX_FILES}},
        "required": ["files"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True, idempotent=True),
)


# -- edit_file -------------------------------------------------------------------------------------
TARGET = {
    "type": "object",
    "properties": {
        "old_string": {"type": "string", "description": "Exact text to replace (copied without row numbers)."},
        "new_string": {"type": "string", "description": "Its replacement; \"\" deletes it (a whole row goes with "
                                                        "its newline)."},
        "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
        "insert_string": {"type": "string", "description": "Text to insert before `row` (with row)."},
        "row": {"type": "integer", "minimum": 1, "description": "The row old_string starts on (to pick one of "
                                                                "several), or the row insert_string goes before."},
    },
    "additionalProperties": False,
}

EDIT_FILE = ToolDescriptor(
    id=ToolId.builtin("edit_file"),
    title="Write or patch a workspace file",
    description="Write a whole file (mode=write, `content`) or patch it (mode=patch, `targets`); mode is inferred "
    "from which one you pass. An existing file must have been read with read_files in this run and be unchanged "
    "since. Patch targets are {old_string, new_string, replace_all?, row?} or {insert_string, row}, all matched "
    "against the file before the edit; if any target fails nothing changes, and a missing anchor's error quotes "
    "the rows that resemble it. An edit that would empty the file is refused (use remove_file). A bare file name "
    "goes into output/. Writable folders: output/, scratch/, plan/, summaries/, persist/.",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "write | patch (inferred when omitted)."},
            "path": {"type": "string", "description": "Workspace path, e.g. `output/report.md`."},
            "content": {"type": "string", "description": "write: the whole new content."},
            "targets": {"type": "array", "items": TARGET, "minItems": 1, "maxItems": 100},
        },
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)


# -- remove_file -----------------------------------------------------------------------------------
REMOVE_FILE = ToolDescriptor(
    id=ToolId.builtin("remove_file"),
    title="Remove a workspace file",
    description="Remove one file by moving it to the workspace trash; restore_file brings it back, file_history "
    "lists what was removed. Only files in the writable folders (output/, scratch/, plan/, summaries/, persist/).",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Workspace path of the file, e.g. "
                                                                 "`output/old.md`."}},
        "required": ["path"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)


# -- restore_file ----------------------------------------------------------------------------------
RESTORE_FILE = ToolDescriptor(
    id=ToolId.builtin("restore_file"),
    title="Restore a workspace file",
    description="Bring back a file removed with remove_file (path alone), put a recorded version back (path and "
    "version; file_history lists the versions; the content it replaces is kept as a new version), or undo every "
    "change this run made with edit_file and remove_file (task_id=\"current\"). Read a restored file before "
    "editing it.",
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Workspace path of the file."},
            "version": {"type": "integer", "minimum": 1, "description": "The version number to put back."},
            "task_id": {"type": "string", "description": "\"current\": restore every file this run changed."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)


# -- file_history ----------------------------------------------------------------------------------
FILE_HISTORY = ToolDescriptor(
    id=ToolId.builtin("file_history"),
    title="File history",
    description="The recorded history of workspace files: every write keeps the previous content as a numbered "
    "version, and removed files stay in the trash. mode=list (default) lists versions and removals newest first, "
    "for `path`, for the files this run changed (task_id=\"current\"), or for every file, within `from`/`to` "
    "(YYYY-MM-DD[ HH:MM[:SS]], UTC), at most `limit` (24). mode=read (inferred from `paths`) shows, per path, a "
    "unified diff from its newest recorded version to the file on disk. restore_file puts a version back.",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "list | read (read when paths is given)."},
            "path": {"type": "string", "description": "One workspace file."},
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50},
            "task_id": {"type": "string", "description": "\"current\": the files this run changed."},
            "from": {"type": "string", "description": "list: earliest time, YYYY-MM-DD[ HH:MM[:SS]] (UTC)."},
            "to": {"type": "string", "description": "list: latest time, YYYY-MM-DD[ HH:MM[:SS]] (UTC)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)


def needs_confirmation(args: Mapping[str, Any]) -> bool:
    """A host command (`sandbox: false`) is `ask` unless the Profile's permissions name the tool."""
    return args.get("sandbox") is False


# -- run_command -----------------------------------------------------------------------------------
_RUN_COMMAND = ToolDescriptor(
    id=ToolId.builtin("run_command"),
    title="Run a command",
    description="Run a command in the sandbox over the workspace and get its output (stdout and stderr together). "
    "argv is the command and its arguments, argv[0] a bare command name; for pipes, redirects or globs use "
    "[\"sh\", \"-c\", \"…\"]; [\"cd\", \"<folder>\"] changes the folder later commands start in. A non-zero "
    "exit is reported as `Error: exit status N` after the output. The sandbox is bash with coreutils-style "
    "commands, jq, python3 (a subset) and node over the workspace folders only: no host programs, files, "
    "environment or network; output is capped at 128 KiB and each command has a time limit.",
    input_schema={
        "type": "object",
        "properties": {
            "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 1000,
                     "description": "The command and its arguments, e.g. [\"ls\", \"-la\", \"output\"]."},
            "sandbox": {"type": "boolean", "description": "Default true. false runs on the host, only where the host "
                                                          "allows it, and asks the user first."},
            "network": {"type": "boolean", "description": "The sandbox has no network; true is refused there."},
            "write_paths": {"type": "array", "items": {"type": "string"}, "maxItems": 50,
                            "description": "Workspace paths the command writes (must be in the writable folders)."},
        },
        "required": ["argv"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
    confirm_when=needs_confirmation,
)


def for_profile(descriptor: ToolDescriptor, profile: Any) -> ToolDescriptor:
    """Without host commands, `sandbox: false` is refused by the tool (not asked about), and the schema says so."""
    if profile.host_commands:
        return descriptor
    schema = dict(descriptor.input_schema)
    props = dict(schema["properties"])
    props["sandbox"] = {"type": "boolean", "description": "Leave it out: this host runs commands only in the "
                                                          "sandbox (false is refused)."}
    schema["properties"] = props
    return replace(descriptor, input_schema=schema, confirm_when=None)


RUN_COMMAND = replace(_RUN_COMMAND, materialize=for_profile)
