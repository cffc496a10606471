"""Where a workspace path really leads: path rules match the target of a symbolic link too."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def workspace_resolver(root: Path) -> Callable[[str], str | None]:
    """`resolve("output/link")` → `"persist/secrets/key"` when `output/link` is a symbolic link there;
    None when the path leads outside the workspace (the workspace refuses those itself)."""
    base = os.path.realpath(root)

    def resolve(rel: str) -> str | None:
        real = os.path.realpath(os.path.join(base, rel))
        if real == base:
            return ""
        if not real.startswith(base + os.sep):
            return None
        return os.path.relpath(real, base).replace(os.sep, "/")

    return resolve
