"""Reading skills: `<folder>/<name>/SKILL.md` with YAML front matter (the Agent Skills format).

`parse_skill_md` turns any bytes into a `Skill` or a `Diagnostic` naming the file and the field (never an
exception). `SkillFolder` scans one folder of skills by stat, re-reading only the SKILL.md files that changed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooldeck.catalog.sources import Diagnostic
from tooldeck.core.preconditions import Requires, RequiresError, parse_requires

SKILL_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_SKILL_BYTES = 1024 * 1024
MAX_DESCRIPTION_CHARS = 1024
INVALID = "skill.definition_invalid"
OPTIONAL_TEXT = ("license", "compatibility", "allowed-tools")
"""Agent Skills' optional text fields (`metadata` is a mapping); any other key is kept as it is."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    folder: Path
    text: str
    """The whole SKILL.md (front matter included), as `run_skill` returns it."""
    front_matter: dict[str, Any] = field(default_factory=dict, compare=False)
    """Every key of the front matter, known or not."""
    requires: Requires | None = None
    """The front matter's `requires:` (core/preconditions.py): the skill is listed only where they hold."""


def _bad(path: str, field_name: str, why: str) -> Diagnostic:
    return Diagnostic(INVALID, f"{path}: `{field_name}` {why}; fix the file and the skill loads at the next "
                      "invocation")


def _front_matter(text: str) -> tuple[str, str] | None:
    """(YAML text, body) when `text` opens with a `---` line closed by another `---` line."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1:])
    return None


def parse_skill_md(data: bytes, path: str, folder_name: str) -> Skill | Diagnostic:
    if len(data) > MAX_SKILL_BYTES:
        return _bad(path, "(file)", f"is {len(data)} bytes; the limit is {MAX_SKILL_BYTES}")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return _bad(path, "(file)", "is not UTF-8 text")
    parts = _front_matter(text)
    if parts is None:
        return _bad(path, "(front matter)", "is missing: the file must open with a `---` line, the YAML fields "
                    "(name, description), and a closing `---` line")
    import yaml  # only when a home has skills: it costs start-up time

    try:
        doc = yaml.safe_load(parts[0])
    except Exception as exc:  # PyYAML raises more than YAMLError on hostile input (e.g. RecursionError)
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 2}" if where is not None else ""
        return _bad(path, "(front matter)", f"is not valid YAML{at} ({str(exc).splitlines()[0][:160]})")
    if not isinstance(doc, dict):
        return _bad(path, "(front matter)", "must be a YAML mapping of fields")
    name = doc.get("name")
    if not isinstance(name, str) or not SKILL_NAME.match(name):
        return _bad(path, "name", "must be 1-64 lowercase letters, digits, `-` or `_`")
    if name != folder_name:
        return _bad(path, "name", f"is {name!r} but the folder is {folder_name!r}; they must be the same")
    description = doc.get("description")
    if not isinstance(description, str) or not description.strip():
        return _bad(path, "description", "must be a non-empty string")
    if len(description) > MAX_DESCRIPTION_CHARS:
        return _bad(path, "description", f"has {len(description)} characters; the limit is {MAX_DESCRIPTION_CHARS}")
    for key in OPTIONAL_TEXT:
        if key in doc and not isinstance(doc[key], str):
            return _bad(path, key, "must be a string")
    if "metadata" in doc and not isinstance(doc["metadata"], dict):
        return _bad(path, "metadata", "must be a mapping")
    try:
        requires = parse_requires(doc.get("requires"))
    except RequiresError as exc:
        return _bad(path, exc.field, exc.message)
    front = {str(k): v for k, v in doc.items()}
    return Skill(name, " ".join(description.split()), Path(path).parent, text, front, requires or None)


@dataclass(frozen=True, slots=True)
class LoadedSkill:
    key: tuple[int, int, int]
    skill: Skill | None
    diagnostic: Diagnostic | None


class SkillFolder:
    """The skills of one folder, rescanned by stat on every `scan()`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._loaded: dict[str, LoadedSkill] = {}
        self.reads = 0

    def scan(self) -> tuple[list[LoadedSkill], bool]:
        try:
            with os.scandir(self.root) as it:
                names = sorted(e.name for e in it if e.is_dir(follow_symlinks=False)
                               and not e.name.startswith((".", "_")))
        except OSError:
            names = []
        out: dict[str, LoadedSkill] = {}
        changed = False
        for name in names:
            loaded = self._load(name)
            if loaded is not None:
                changed = changed or self._loaded.get(name) is not loaded
                out[name] = loaded
        changed = changed or out.keys() != self._loaded.keys()
        self._loaded = out
        return list(out.values()), changed

    def _load(self, name: str) -> LoadedSkill | None:
        path = self.root / name / "SKILL.md"
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        if not os.path.stat.S_ISREG(st.st_mode):
            return None
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
        earlier = self._loaded.get(name)
        if earlier is not None and earlier.key == key:
            return earlier
        try:
            data = path.read_bytes()
        except OSError as exc:
            return LoadedSkill(key, None, Diagnostic(INVALID, f"{path}: cannot be read ({exc.strerror})"))
        self.reads += 1
        parsed = parse_skill_md(data, str(path), name)
        if isinstance(parsed, Diagnostic):
            return LoadedSkill(key, None, parsed)
        return LoadedSkill(key, parsed, None)

    def skills(self) -> tuple[list[Skill], list[Diagnostic], bool]:
        loaded, changed = self.scan()
        return ([x.skill for x in loaded if x.skill is not None],
                [x.diagnostic for x in loaded if x.diagnostic is not None], changed)
