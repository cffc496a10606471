"""MCP servers as tool sources: configuration, registrations, cached catalogs, calls on one background loop.

What a host or an integration needs, with no import from the modules behind it:

- the source and its configuration: `McpManager`, `load`, `McpConfig`, `ServerConfig`, `Permission`,
  `expand` (`${VAR}` expansion, as the source does it), `McpConfigError`;
- what it reports: `ServerStatus`, `RefreshReport`, `ToolInfo`, `Failure`, and the stable codes in
  `errors` (`errors.NOT_SENT`, `errors.CALL_OUTCOME_UNKNOWN`, …);
- for code that talks to MCP servers itself (a relay), the two translations this package owns: a tool
  result into a `ToolOutput` (`result_output`, `SaveTarget`), and a failure into a code, a cause and a
  next step (`classify` with `Evidence` and `Target` for a server, `classify_call` with `CallFacts` and
  `CallOutcome` for a call).
"""

from tooldeck.sources.mcp import errors
from tooldeck.sources.mcp.call_outcome import CallFacts, CallOutcome, classify_call
from tooldeck.sources.mcp.classify import classify
from tooldeck.sources.mcp.config import McpConfig, Permission, ServerConfig, expand, load
from tooldeck.sources.mcp.content import SaveTarget, result_output
from tooldeck.sources.mcp.errors import McpConfigError
from tooldeck.sources.mcp.evidence import Evidence
from tooldeck.sources.mcp.failures import Failure, Target
from tooldeck.sources.mcp.manager import McpManager
from tooldeck.sources.mcp.reports import RefreshReport, ServerStatus, ToolInfo

__all__ = [
    "CallFacts",
    "CallOutcome",
    "Evidence",
    "Failure",
    "McpConfig",
    "McpConfigError",
    "McpManager",
    "Permission",
    "RefreshReport",
    "SaveTarget",
    "ServerConfig",
    "ServerStatus",
    "Target",
    "ToolInfo",
    "classify",
    "classify_call",
    "errors",
    "expand",
    "load",
    "result_output",
]
