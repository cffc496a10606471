"""Reading script tool folders: `<dir>/<name>/tool.json` (Agenvoy's format) beside an entry script.

`parse_tool_json` turns any bytes into a `ScriptSpec` or a `Diagnostic` naming the file and the field
(never an exception). `ScriptFolder` scans one root (`tools/script` or `tools/ext`) and keeps what it
read keyed by each file's stat, so a scan that finds nothing changed re-reads no file and returns the
very same descriptor objects (the snapshot cache then reuses the snapshot).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.preconditions import Requires, RequiresError, parse_requires
from tooldeck.validation import CompiledSchema

NAME = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
ENTRIES = (("script.js", "node"), ("script.py", "python3"), ("script.sh", "bash"))
"""Checked in this order (Agenvoy checks script.js before script.py); the first present is the entry."""
MAX_TOOL_JSON_BYTES = 256 * 1024
MAX_TIMEOUT_S = 3600.0
INVALID = "script.definition_invalid"
NO_ENTRY = "script.entry_missing"
DUPLICATE = "script.name_duplicate"


@dataclass(frozen=True, slots=True)
class ScriptSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    timeout_s: float | None
    always_allow: bool
    concurrent: bool
    requires: Requires | None = None


def _bad(path: str, field: str, why: str) -> Diagnostic:
    return Diagnostic(INVALID, f"{path}: `{field}` {why}; fix the file and the tool loads at the next invocation")


def parse_tool_json(data: bytes, path: str) -> ScriptSpec | Diagnostic:
    """A tool.json's bytes → its spec, or a diagnostic naming `path` and the offending field."""
    if len(data) > MAX_TOOL_JSON_BYTES:
        return _bad(path, "(file)", f"is {len(data)} bytes; the limit is {MAX_TOOL_JSON_BYTES}")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return _bad(path, "(file)", f"is not valid UTF-8 JSON ({str(exc)[:120]})")
    if not isinstance(doc, dict):
        return _bad(path, "(file)", f"must be a JSON object, not {type(doc).__name__}")
    name = doc.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        return _bad(path, "name", "must be 1-48 letters, digits, `_` or `-`")
    description = doc.get("description")
    if not isinstance(description, str) or not description.strip():
        return _bad(path, "description", "must be a non-empty string")
    parameters = doc.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict) or parameters.get("type", "object") != "object":
        return _bad(path, "parameters", 'must be a JSON Schema object with "type": "object"')
    parameters = {"type": "object", **parameters}
    parameters.setdefault("properties", {})
    if not isinstance(parameters["properties"], dict):
        return _bad(path, "parameters.properties", "must be an object")
    timeout = doc.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or not 0 < timeout <= MAX_TIMEOUT_S):
        return _bad(path, "timeout", f"must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]")
    flags: dict[str, bool] = {}
    for key in ("always_allow", "concurrent"):
        value = doc.get(key, False)
        if not isinstance(value, bool):
            return _bad(path, key, "must be true or false")
        flags[key] = value
    try:
        requires = parse_requires(doc.get("requires"))
    except RequiresError as exc:
        return _bad(path, exc.field, exc.message)
    error = CompiledSchema(parameters).error
    if error is not None:
        return _bad(path, "parameters", f"is not a valid JSON Schema ({error[:160]})")
    return ScriptSpec(name, description.strip(), parameters, None if timeout is None else float(timeout),
                      flags["always_allow"], flags["concurrent"], requires or None)


@dataclass(frozen=True, slots=True)
class Loaded:
    """One folder as last read: the stat key it was read under and what it gave."""

    key: tuple[Any, ...]
    spec: ScriptSpec | None
    folder: Path
    entry: str | None
    runtime: str | None
    diagnostic: Diagnostic | None


def _stat_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ScriptFolder:
    """One root of script tool folders, rescanned by stat on every `scan()`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._loaded: dict[str, Loaded] = {}
        self.reads = 0
        """tool.json files read so far (the bench and tests check that unchanged files are not re-read)."""

    def scan(self) -> tuple[list[Loaded], bool]:
        """Every tool folder now, and whether anything differs from the previous scan."""
        if not self._loaded and not os.path.isdir(self.root):  # the common case: no such folder, one stat
            return [], False
        try:
            with os.scandir(self.root) as it:
                names = sorted(e.name for e in it if e.is_dir(follow_symlinks=False)
                               and not e.name.startswith(("_", ".")))
        except OSError:
            names = []
        changed = len(names) != len(self._loaded)
        out: dict[str, Loaded] = {}
        root = os.fspath(self.root)
        for name in names:
            loaded = self._load(root, name)
            if loaded is None:
                continue
            changed = changed or self._loaded.get(name) is not loaded
            out[name] = loaded
        changed = changed or out.keys() != self._loaded.keys()
        self._loaded = out
        return list(out.values()), changed

    def _load(self, root: str, dir_name: str) -> Loaded | None:
        # Two stats decide whether the folder is unchanged: tool.json's, and the folder's own (its mtime moves
        # when an entry script is added, removed or renamed). The entry's content is read at call time.
        base = f"{root}/{dir_name}"
        try:
            meta_st = os.stat(base + "/tool.json")
            dir_st = os.stat(base)
        except OSError:
            return None
        key = (*_stat_key(meta_st), dir_st.st_mtime_ns)
        earlier = self._loaded.get(dir_name)
        if earlier is not None and earlier.key == key:
            return earlier
        folder = Path(base)
        entry = next(((f, rt) for f, rt in ENTRIES if os.path.isfile(os.path.join(base, f))), None)
        path = str(folder / "tool.json")
        try:
            data = (folder / "tool.json").read_bytes()
        except OSError as exc:
            diag = Diagnostic(INVALID, f"{path}: cannot be read ({exc.strerror})")
            return Loaded(key, None, folder, None, None, diag)
        self.reads += 1
        parsed = parse_tool_json(data, path)
        if isinstance(parsed, Diagnostic):
            return Loaded(key, None, folder, None, None, parsed)
        if entry is None:
            diag = Diagnostic(NO_ENTRY, f"{folder}: has tool.json but no script.js, script.py or script.sh beside it; "
                              "add one and the tool loads at the next invocation")
            return Loaded(key, None, folder, None, None, diag)
        return Loaded(key, parsed, folder, entry[0], entry[1], None)
