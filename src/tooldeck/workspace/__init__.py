"""The run's workspace: path policy, files with read-state and compare-and-swap, read-only views.

Modules: `paths` (policy, pure), `fs` (symlink-safe file operations), `store` (per-run store: CAS,
read-state, history), `readstate`, `history` (versions and trash), `views` (read-only roots),
`reading` / `listing` / `search` (what the file tools show), `effects` (host read API).
"""

from __future__ import annotations

from tooldeck.workspace import effects
from tooldeck.workspace.paths import PathPolicy, parse_dir, parse_path
from tooldeck.workspace.store import WorkspaceStore, for_run

__all__ = ["PathPolicy", "WorkspaceStore", "effects", "for_run", "parse_dir", "parse_path"]
