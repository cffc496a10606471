"""Workspace path policy: parsing model-facing paths and deciding what is visible or writable.

Pure functions over strings; no I/O and no side effects on import, so any tool family (file tools,
the shell) can share the same rules.

Public API:

- `parse_path(raw)` → the normalised relative POSIX path, or `ToolCallError(workspace.invalid_path)`.
  Reads the escapes of shown paths back (`\\u{HEX}`, see `names`); rejects empty, NUL, a leading `/`
  or `\\`, a drive letter (`C:`), `..`, and a character no file name can hold (a lone surrogate
  that stands for no byte); turns any other `\\` into `/`; drops `.` and empty segments.
- `parse_dir(raw)` → like `parse_path`, but `None`, `""`, `"."`, `"./"` mean the workspace root (`""`).
- `PathPolicy.from_roots(roots)` (roots = `Profile.workspace`) with `is_visible(p)`, `is_writable(p)`,
  `check_visible(p)`, `check_writable(p)`, `root_of(p)`, `visible_roots`, `default_search_roots`.

Visible means under a visible root (writable or read-only); writable means a strict child of a
writable root, so a root itself is never writable. Every other top-level name is hidden.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Protocol

from tooldeck.core.errors import ToolCallError
from tooldeck.workspace.errors import INVALID_PATH, PATH_NOT_VISIBLE, PATH_NOT_WRITABLE
from tooldeck.workspace.names import decode, shown, shown_text

ROOT_SPELLINGS = frozenset(("", ".", "./"))
NOT_SEARCHED_BY_DEFAULT = ("tool-results", "skills")
_DRIVE = re.compile(r"^[A-Za-z]:")


class RootsLike(Protocol):
    writable: list[str]
    read_only: list[str]
    body_file: str


def _invalid(raw: str, why: str) -> ToolCallError:
    return ToolCallError(INVALID_PATH, f"`{shown_text(raw)}` is not a valid workspace path: {why}. Use a relative "
                         "path such as `output/main.md`.")


def parse_path(raw: str) -> str:
    """Normalise a model-facing path; raise `workspace.invalid_path` when it cannot name a workspace file."""
    if not isinstance(raw, str) or not raw.strip():
        raise _invalid(str(raw or ""), "it is empty")
    try:
        path = decode(raw)
    except ValueError as exc:
        raise _invalid(raw, str(exc)) from None
    if "\0" in path:
        raise _invalid(raw, "it contains a NUL character")
    if path[0] == "/":
        raise _invalid(raw, "it is absolute; workspace paths are relative")
    if _DRIVE.match(path):
        raise _invalid(raw, "it starts with a drive letter")
    if not path.isascii():
        path = _canonical(raw, path)
    parts: list[str] = []
    for seg in path.split("/"):
        if seg in ("", "."):
            continue
        if seg == "..":
            raise _invalid(raw, "`..` is not allowed")
        parts.append(seg)
    if not parts:
        raise _invalid(raw, "it names no file")
    return "/".join(parts)


def _canonical(raw: str, path: str) -> str:
    """The one spelling of a name on disk: `\\u{DCC3}\\u{DCA9}` (the bytes of `é`) becomes `é`, so two
    spellings of one file share its lock and read-state. A surrogate outside U+DC80–U+DCFF stands for
    no byte and names nothing."""
    try:
        return os.fsdecode(os.fsencode(path))
    except UnicodeError:
        bad = next(ch for ch in path if 0xD800 <= ord(ch) <= 0xDFFF)
        raise _invalid(raw, f"U+{ord(bad):04X} is not a character a file name can hold") from None


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
            raise ToolCallError(PATH_NOT_VISIBLE, f"`{shown(path)}` is not in the visible workspace. Use a path under "
                                f"one of the visible folders ({self.roots_text()}).")
        return path

    def check_writable(self, path: str) -> str:
        if self.is_writable(path):
            return path
        root, _rest = split_root(path)
        if root in self.writable:
            example = self.body_file if self.root_of(self.body_file) == root else f"{root}/notes.md"
            why = (f"`{shown(root)}` is a root folder and cannot be written itself; write a file inside it, e.g. "
                   f"`{shown(example)}`.")
        elif root in self.read_only:
            why = f"`{shown(path)}` is read-only ({shown(root)}/ can be read, not written)."
        else:
            why = f"`{shown(path)}` is outside the writable workspace."
        writable = ", ".join(f"{r}/" for r in self.writable) or "none"
        raise ToolCallError(PATH_NOT_WRITABLE, f"{why} Writable folders: {writable}.")
