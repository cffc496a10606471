"""Read-only views: the `tool-results/` and `skills/` roots.

By default a read-only root is the folder of that name inside the workspace (the projection writes
spilled results to `tool-results/` there). A host may instead mount an outside folder as a
read-only root (for example a skills library, which is not copied into the run):

    tooldeck.workspace.for_run(run_state).views.mount("skills", "/srv/skills")

Paths under a mounted root resolve against the mounted folder and may never leave it. The file
tools never write under a read-only root, mounted or not; that is enforced by the path policy,
not by file permissions.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tooldeck.core.errors import TooldeckError


class Views:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mounts: dict[str, str] = {}

    def mount(self, root: str, directory: str | Path) -> None:
        """Serve the read-only root `root` from `directory` (which must exist)."""
        if not root or "/" in root or "\\" in root or root in (".", ".."):
            raise TooldeckError("workspace.view_invalid", f"view root {root!r} must be one path segment")
        real = os.path.realpath(directory)
        if not os.path.isdir(real):
            raise TooldeckError("workspace.view_invalid", f"view folder {directory} is not a directory")
        with self._lock:
            self._mounts[root] = real

    def unmount(self, root: str) -> None:
        with self._lock:
            self._mounts.pop(root, None)

    def base_of(self, root: str) -> str | None:
        """The real folder a mounted root is served from, or None when it lives in the workspace."""
        return self._mounts.get(root)

    def mounts(self) -> dict[str, str]:
        return dict(self._mounts)
