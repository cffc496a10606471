"""Which workspace roots the shell mounts, and where.

`/` inside the shell is the workspace root. Each visible root `<name>` of the Profile is a real
host directory mounted at `/<name>`: writable roots read-write, read-only roots (`tool-results/`,
`skills/`) read-only. Hidden roots (`input/`, `.tooldeck/`, anything not listed) are never mounted,
so they do not exist in the shell. Everything outside the mounts is bashkit's in-memory tree, thrown
away after the call.

A read-only root the host serves from a folder outside the workspace (`WorkspaceStore.views`, e.g. a
skills library) is mounted from that folder, as the file tools read it. `extra` mounts are added by a
caller that needs more (a script tool's own folder, read-only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tooldeck.workspace.paths import PathPolicy, RootsLike


@dataclass(frozen=True, slots=True)
class Mount:
    name: str
    host_path: Path
    writable: bool

    @property
    def vfs_path(self) -> str:
        return "/" + self.name


@dataclass(frozen=True, slots=True)
class Layout:
    workspace_root: Path
    policy: PathPolicy
    views: Mapping[str, str] = field(default_factory=dict)
    """Read-only roots served from a folder outside the workspace: root name → real host folder."""
    extra: tuple[Mount, ...] = ()

    @classmethod
    def for_workspace(cls, workspace_root: Path, roots: RootsLike, views: Mapping[str, str] | None = None) -> Layout:
        return cls(Path(workspace_root), PathPolicy.from_roots(roots), dict(views or {}))

    def mounts(self) -> tuple[list[Mount], list[str]]:
        """The mounts to make now, and notes for stderr about roots that were left out.

        Writable roots are created when missing. A read-only root is mounted only when it exists.
        A root that is a symbolic link (or not a directory) is never mounted: it could lead out of
        the workspace.
        """
        base = self.workspace_root.resolve()
        mounts: list[Mount] = []
        notes: list[str] = []
        for name, writable in [*((r, True) for r in self.policy.writable),
                               *((r, False) for r in self.policy.read_only)]:
            view = None if writable else self.views.get(name)
            if view is not None:
                if Path(view).is_dir():
                    mounts.append(Mount(name, Path(view), False))
                continue
            host = base / name
            if host.is_symlink():
                notes.append(f"shell: /{name} is a symbolic link in the workspace and was not mounted")
                continue
            if not host.exists():
                if not writable:
                    continue
                host.mkdir(parents=True, exist_ok=True)
            if not host.is_dir():
                notes.append(f"shell: /{name} is not a folder in the workspace and was not mounted")
                continue
            mounts.append(Mount(name, host, writable))
        mounts.extend(self.extra)
        return mounts, notes
