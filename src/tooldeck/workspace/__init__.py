"""The run's workspace: path policy, files with read-state and compare-and-swap, read-only views.

Modules: `paths` (policy, pure), `names` (how paths are shown and read back, pure), `errors` (codes and
the one table of OS errors), `fs` (symlink-safe file operations), `locks` (the CAS lock across threads
and processes), `store` (per-run store: CAS, read-state, history, size limits), `readstate`, `history`
(versions and trash), `views` (read-only roots), `reading` / `listing` / `search` (what the file tools
show), `grep` (RE2 matching with deadlines), `effects` (host read API).
"""

from __future__ import annotations

from tooldeck.workspace import effects
from tooldeck.workspace.paths import PathPolicy, parse_dir, parse_path
from tooldeck.workspace.store import WorkspaceStore, for_run

__all__ = ["PathPolicy", "WorkspaceStore", "effects", "for_run", "parse_dir", "parse_path"]
