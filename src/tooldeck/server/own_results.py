"""tooldeck's own spilled result files as MCP resources (`OwnResults`).

A proxied tool's result that the projection spilled to `tool-results/<invocation>/<file>` is relayed with a
`resource_link` to `tooldeck://tool-results/<invocation>/<file>` (`mapping.spilled_uri`). `resources/read` of
that URI serves the file, read-only, to the session whose call made it and to no other (another session, or a
URI tooldeck did not hand out, is "not found": the URI names nothing else on disk). The newest `MAX_FILES` links
are kept; a session that ends forgets its own.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import mcp_types as types
from mcp.shared.exceptions import MCPError

from tooldeck.core.results import AgentToolResult
from tooldeck.server.mapping import SPILLED_SCHEME, spilled_file, spilled_uri

RESULT_UNKNOWN = "serve.result_unknown"
RESOURCE_NOT_FOUND = -32002
MAX_FILES = 10_000


class OwnResults:
    def __init__(self) -> None:
        self.files: OrderedDict[str, tuple[str | None, Path]] = OrderedDict()

    def note(self, session_key: str | None, result: AgentToolResult, workspace_root: Path, invocation_id: str) -> None:
        """Remember the spilled file of a relayed result (if it was spilled) for its session."""
        spilled = spilled_file(result, workspace_root, invocation_id)
        if spilled is None:
            return
        rel, path = spilled
        self.files[spilled_uri(rel)] = (session_key, path)
        while len(self.files) > MAX_FILES:
            self.files.popitem(last=False)

    def forget(self, session_key: str) -> None:
        for uri in [u for u, (key, _) in self.files.items() if key == session_key]:
            del self.files[uri]

    def read(self, uri: str, session_key: str | None) -> types.ReadResourceResult | None:
        """The file behind one of our URIs; None when `uri` is not of tooldeck's own scheme."""
        if not uri.startswith(SPILLED_SCHEME):
            return None
        entry = self.files.get(uri)
        text: str | None = None
        if entry is not None and entry[0] == session_key:
            try:
                text = entry[1].read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = None
        if text is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"{uri[:300]!r} is not a spilled result of this session (or its file "
                           "is gone). Only the resource links of this session's own tool results can be read.",
                           data={"code": RESULT_UNKNOWN, "uri": uri[:300]})
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/plain",
                                                                            text=text)])
