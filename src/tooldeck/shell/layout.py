"""Which workspace roots the shell mounts, and where.

`/` inside the shell is the workspace root. Each visible root `<name>` of the Profile is a real
host directory mounted at `/<name>`: writable roots read-write, read-only roots (`tool-results/`,
`skills/`) read-only. Hidden roots (`input/`, `.tooldeck/`, anything not listed) are never mounted,
so they do not exist in the shell. Everything outside the mounts is bashkit's in-memory tree, thrown
away after the call.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    @classmethod
    def for_workspace(cls, workspace_root: Path, roots: RootsLike) -> Layout:
        return cls(Path(workspace_root), PathPolicy.from_roots(roots))

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
        return mounts, notes
