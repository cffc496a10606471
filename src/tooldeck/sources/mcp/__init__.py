"""MCP servers as tool sources: configuration, registrations, cached catalogs, calls on one background loop.

What a host or an integration needs, with no import from the modules behind it:

- the source and its configuration: `McpManager`, `load`, `McpConfig`, `ServerConfig`, `Permission`,
  `expand` (`${VAR}` expansion, as the source does it), `McpConfigError`;
- what it reports: `ServerStatus`, `RefreshReport`, `ToolInfo`, `ToolDiff` (a tool changed since its
  pinned definition, `McpManager.diff`), `Failure`, and the stable codes in
  `errors` (`errors.NOT_SENT`, `errors.CALL_OUTCOME_UNKNOWN`, …);
- for code that talks to MCP servers itself (a relay), the two translations this package owns: a tool
  result into a `ToolOutput` (`result_output`, `SaveTarget`), and a failure into a code, a cause and a
  next step (`classify` with `Evidence` and `Target` for a server, `classify_call` with `CallFacts` and
  `CallOutcome` for a call);
- for a gateway that relays results as the servers sent them (`tooldeck serve`): `collect_results`, a
  context manager that collects the upstream `CallToolResult` of each MCP call made inside it, by call id,
  and `relay_to(peer)`, which sends the requests and notifications an upstream server makes during those
  calls (sampling, elicitation, roots, progress, logging) to the gateway's client (`Peer`); and for
  relaying the servers' resources and prompts: `McpManager.upstream`, the names scheme (`assign_uris`,
  `decode_uri`, `assign_prompts`), `Watches` (resource subscriptions) and `ConnectFailed` (a server that
  cannot be reached);
- for a library host with no MCP client in front: `McpCallbacks` (set on `McpManager.callbacks`);
- OAuth sign-in (`tooldeck mcp login`): `oauth_plan` (an entry's `OAuthPlan`), `login` (the browser flow),
  `client_credentials_login`, `logout`, `sign_in_state` (an `AuthState`, never a token), `NotNeeded`, and
  `first_cause` (the exception that explains a failed login).

Every name is imported on first use (PEP 562): importing this package, or `config` and `wiring`
inside it, does not import the MCP SDK (about half a second), so a Runtime whose home configures no
MCP server never pays for it.
"""

import importlib
import sys
import types
import typing

if typing.TYPE_CHECKING:
    from tooldeck.sources.mcp import errors
    from tooldeck.sources.mcp.call_outcome import CallFacts, CallOutcome, classify_call
    from tooldeck.sources.mcp.callbacks import McpCallbacks, Peer, relay_to
    from tooldeck.sources.mcp.classify import classify
    from tooldeck.sources.mcp.config import McpConfig, Permission, ServerConfig, expand, load
    from tooldeck.sources.mcp.content import SaveTarget, result_output
    from tooldeck.sources.mcp.errors import McpConfigError
    from tooldeck.sources.mcp.evidence import Evidence
    from tooldeck.sources.mcp.failures import ConnectFailed, Failure, Target
    from tooldeck.sources.mcp.login import (
        NotNeeded,
        client_credentials_login,
        first_cause,
        login,
        logout,
        sign_in_state,
    )
    from tooldeck.sources.mcp.manager import McpManager
    from tooldeck.sources.mcp.namespace import assign_prompts, assign_uris, decode_uri
    from tooldeck.sources.mcp.oauth_config import OAuthPlan, oauth_plan
    from tooldeck.sources.mcp.pin_checks import ToolDiff
    from tooldeck.sources.mcp.relay import collect_results
    from tooldeck.sources.mcp.reports import RefreshReport, ServerStatus, ToolInfo
    from tooldeck.sources.mcp.tokens import AuthState
    from tooldeck.sources.mcp.watches import Watches

# public name -> the module that defines it (`errors` is the module itself)
_EXPORTS = {
    "AuthState": "tokens",
    "NotNeeded": "login",
    "OAuthPlan": "oauth_config",
    "client_credentials_login": "login",
    "first_cause": "login",
    "login": "login",
    "logout": "login",
    "oauth_plan": "oauth_config",
    "sign_in_state": "login",
    "CallFacts": "call_outcome",
    "CallOutcome": "call_outcome",
    "ConnectFailed": "failures",
    "Evidence": "evidence",
    "Failure": "failures",
    "McpConfig": "config",
    "McpCallbacks": "callbacks",
    "McpConfigError": "errors",
    "Peer": "callbacks",
    "McpManager": "manager",
    "Permission": "config",
    "RefreshReport": "reports",
    "SaveTarget": "content",
    "ServerConfig": "config",
    "ServerStatus": "reports",
    "Target": "failures",
    "ToolDiff": "pin_checks",
    "ToolInfo": "reports",
    "Watches": "watches",
    "assign_prompts": "namespace",
    "assign_uris": "namespace",
    "classify": "classify",
    "classify_call": "call_outcome",
    "collect_results": "relay",
    "decode_uri": "namespace",
    "errors": "errors",
    "expand": "config",
    "load": "config",
    "relay_to": "callbacks",
    "result_output": "content",
}

__all__ = [
    "AuthState",
    "CallFacts",
    "CallOutcome",
    "ConnectFailed",
    "Evidence",
    "Failure",
    "McpCallbacks",
    "McpConfig",
    "McpConfigError",
    "McpManager",
    "NotNeeded",
    "OAuthPlan",
    "Peer",
    "Permission",
    "RefreshReport",
    "SaveTarget",
    "ServerConfig",
    "ServerStatus",
    "Target",
    "ToolDiff",
    "ToolInfo",
    "Watches",
    "assign_prompts",
    "assign_uris",
    "classify",
    "classify_call",
    "client_credentials_login",
    "collect_results",
    "decode_uri",
    "errors",
    "expand",
    "first_cause",
    "load",
    "login",
    "logout",
    "oauth_plan",
    "relay_to",
    "result_output",
    "sign_in_state",
]


def __getattr__(name: str) -> typing.Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{module_name}")
    value = module if name == "errors" else getattr(module, name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """Keeps an exported name that is also a submodule's name (`classify`) bound to the export: the import
    system binds a submodule to its package's attribute once the submodule has run, which would otherwise
    replace the function `classify` with the module `classify` after the first import of the manager."""

    def __setattr__(self, name: str, value: typing.Any) -> None:
        if (isinstance(value, types.ModuleType) and name != "errors" and _EXPORTS.get(name) == name
                and value.__name__ == f"{__name__}.{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
