"""The script source of a home, built the first time `<home>/tools` or `<home>/skills` exists.

`sources/scripts.py` brings the script, skill and authoring modules with it (a fifth of `tooldeck call`'s
start-up); a home that has neither folder pays two `stat`s per invocation instead, and a folder created
later is picked up at the next invocation, as the script source itself would.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from tooldeck.catalog.sources import Diagnostic, Executable, ToolSource
from tooldeck.core.descriptors import ToolDescriptor
from tooldeck.core.ids import SourceKind, ToolId

if TYPE_CHECKING:
    from tooldeck.gate import GateTable
    from tooldeck.sources.scripts import ScriptSource
    from tooldeck.sources.skills import RunSkills


class HomeScriptSource(ToolSource):
    kind: SourceKind = "script"

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self._roots = (os.fspath(self.home / "tools"), os.fspath(self.home / "skills"))
        self._source: ScriptSource | None = None
        self._lock = threading.Lock()

    @property
    def source(self) -> ScriptSource | None:
        """The script source, once one of the folders has existed."""
        if self._source is None and any(os.path.isdir(root) for root in self._roots):
            with self._lock:  # `tooldeck serve`'s catalog check and invocations may ask at once
                if self._source is None:
                    from tooldeck.sources.scripts import ScriptSource

                    self._source = ScriptSource(self.home)
        return self._source

    @property
    def skills(self) -> RunSkills | None:
        """The skill scopes (`run_skill`, the deferred turn context), once the script source exists."""
        return self._source.skills if self._source is not None else None

    @property
    def reads(self) -> int:
        """tool.json and SKILL.md files read so far (unchanged files are never re-read)."""
        return self._source.reads if self._source is not None else 0

    def descriptors(self) -> list[ToolDescriptor]:
        source = self.source
        return source.descriptors() if source is not None else []

    def diagnostics(self) -> list[Diagnostic]:
        return self._source.diagnostics() if self._source is not None else []

    def resolve(self, tool_id: ToolId) -> Executable | None:
        return self._source.resolve(tool_id) if self._source is not None else None

    def prepare_gate(self, table: GateTable) -> None:
        if self._source is not None:
            self._source.prepare_gate(table)

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
