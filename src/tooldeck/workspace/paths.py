"""Workspace path policy: parsing model-facing paths and deciding what is visible or writable.

Pure functions over strings; no I/O and no side effects on import, so any tool family (file tools,
the shell) can share the same rules.

Public API:

- `parse_path(raw)` → the normalised relative POSIX path, or `ToolCallError(workspace.invalid_path)`.
  Rejects empty, NUL, a leading `/` or `\\`, a drive letter (`C:`), and `..`; turns `\\` into `/`;
  drops `.` and empty segments.
- `parse_dir(raw)` → like `parse_path`, but `None`, `""`, `"."`, `"./"` mean the workspace root (`""`).
- `PathPolicy.from_roots(roots)` (roots = `Profile.workspace`) with `is_visible(p)`, `is_writable(p)`,
  `check_visible(p)`, `check_writable(p)`, `root_of(p)`, `visible_roots`, `default_search_roots`.

Visible means under a visible root (writable or read-only); writable means a strict child of a
writable root, so a root itself is never writable. Every other top-level name is hidden.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.errors import INVALID_PATH, PATH_NOT_VISIBLE, PATH_NOT_WRITABLE

ROOT_SPELLINGS = frozenset(("", ".", "./"))
NOT_SEARCHED_BY_DEFAULT = ("tool-results", "skills")
_DRIVE = re.compile(r"^[A-Za-z]:")


class RootsLike(Protocol):
    writable: list[str]
    read_only: list[str]
    body_file: str


def _invalid(raw: str, why: str) -> ToolCallError:
    shown = raw.replace("\0", "\\0")
    return ToolCallError(INVALID_PATH, f"`{shown}` is not a valid workspace path: {why}. Use a relative path "
                         "such as `output/main.md`.")


def parse_path(raw: str) -> str:
    """Normalise a model-facing path; raise `workspace.invalid_path` when it cannot name a workspace file."""
    if not isinstance(raw, str) or not raw.strip():
        raise _invalid(str(raw or ""), "it is empty")
    if "\0" in raw:
        raise _invalid(raw, "it contains a NUL character")
    if raw[0] in "/\\":
        raise _invalid(raw, "it is absolute; workspace paths are relative")
    if _DRIVE.match(raw):
        raise _invalid(raw, "it starts with a drive letter")
    parts: list[str] = []
    for seg in raw.replace("\\", "/").split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            raise _invalid(raw, "`..` is not allowed")
        parts.append(seg)
    if not parts:
        raise _invalid(raw, "it names no file")
    return "/".join(parts)


def parse_dir(raw: str | None) -> str:
    """A folder argument: `None`, `""`, `"."` and `"./"` mean the workspace root, returned as `""`."""
    if raw is None or (isinstance(raw, str) and raw.strip() in ROOT_SPELLINGS):
        return ""
    return parse_path(raw)


def split_root(path: str) -> tuple[str, str]:
    """`output/a/b.md` → (`output`, `a/b.md`)."""
    root, _, rest = path.partition("/")
    return root, rest


@dataclass(frozen=True, slots=True)
class PathPolicy:
    writable: tuple[str, ...]
    read_only: tuple[str, ...]
    body_file: str = "output/main.md"

    @classmethod
    def from_roots(cls, roots: RootsLike) -> PathPolicy:
        return cls(tuple(roots.writable), tuple(r for r in roots.read_only if r not in roots.writable),
                   roots.body_file)

    @property
    def visible_roots(self) -> tuple[str, ...]:
        return self.writable + self.read_only

    @property
    def default_search_roots(self) -> tuple[str, ...]:
        """What a search with no path covers: the visible roots except `tool-results/` and `skills/`."""
        return tuple(r for r in self.visible_roots if r not in NOT_SEARCHED_BY_DEFAULT)

    def root_of(self, path: str) -> str:
        return split_root(path)[0]

    def is_visible(self, path: str) -> bool:
        return self.root_of(path) in self.visible_roots

    def is_writable(self, path: str) -> bool:
        root, rest = split_root(path)
        return bool(rest) and root in self.writable

    def roots_text(self) -> str:
        writable = ", ".join(f"{r}/" for r in self.writable) or "none"
        read_only = ", ".join(f"{r}/" for r in self.read_only) or "none"
        return f"writable: {writable}; read-only: {read_only}"

    def check_visible(self, path: str) -> str:
        if not self.is_visible(path):
            raise ToolCallError(PATH_NOT_VISIBLE, f"`{path}` is not in the visible workspace. Use a path under "
                                f"one of the visible folders ({self.roots_text()}).")
        return path

    def check_writable(self, path: str) -> str:
        if self.is_writable(path):
            return path
        root, _rest = split_root(path)
        if root in self.writable:
            example = self.body_file if self.root_of(self.body_file) == root else f"{root}/notes.md"
            why = f"`{root}` is a root folder and cannot be written itself; write a file inside it, e.g. `{example}`."
        elif root in self.read_only:
            why = f"`{path}` is read-only ({root}/ can be read, not written)."
        else:
            why = f"`{path}` is outside the writable workspace."
        writable = ", ".join(f"{r}/" for r in self.writable) or "none"
        raise ToolCallError(PATH_NOT_WRITABLE, f"{why} Writable folders: {writable}.")
