"""tooldeck's MCP client as the conformance kit's client under test (`conformance client --command ...`).

    python conformance_client.py SERVER_URL      (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT in the env)

The scenario's server becomes the one server of a fresh home (`mcp.json`), reached the way tooldeck
reaches any upstream server: a `Runtime` lists and calls its tools (McpManager, ServerConnection, the
transport), the host's `McpCallbacks` answer elicitation. Authorization is tooldeck's too: where the
server asks for a sign-in (`mcp.auth_required` / `mcp.auth_forbidden` naming `tooldeck mcp login`), this
client does what a user does, `tooldeck mcp login`'s flow (`sources/mcp/login.py`), with a "browser" that
follows the authorization URL (the kit's authorization server approves at once), then tries again.
Client-credentials scenarios configure `oauth.grant = "client_credentials"` from the context, the cross-app
access scenario `oauth.grant = "identity_assertion"` with the context's identity provider (the ID token in
`IDP_ID_TOKEN`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types

from tooldeck.runtime import Runtime
from tooldeck.sources.mcp import McpCallbacks
from tooldeck.sources.mcp import config as cfg
from tooldeck.sources.mcp.login import login

SERVER = "srv"
AUTH_CODES = ("mcp.auth_required", "mcp.auth_forbidden")
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""This client's metadata document (the kit's authorization server takes it as the client id where it
supports client ID metadata documents; it is never fetched)."""


def _entry(url: str, scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"url": url, "protocol": "legacy"}
    oauth: dict[str, Any] = {}
    if "client_id" in context:
        oauth["client_id"] = context["client_id"]
        if context.get("client_secret"):
            oauth["client_secret"] = context["client_secret"]
    if scenario.startswith("auth/client-credentials"):
        oauth["grant"] = "client_credentials"
    if "idp_token_endpoint" in context:  # cross-app access: the ID token comes from the environment, as a user's would
        os.environ["IDP_ID_TOKEN"] = context["idp_id_token"]
        oauth["grant"] = "identity_assertion"
        oauth["identity_provider"] = {"token_endpoint": context["idp_token_endpoint"],
                                      "client_id": context["idp_client_id"], "id_token": "${IDP_ID_TOKEN}"}
    if context.get("private_key_pem"):
        oauth["private_key"] = context["private_key_pem"]
        oauth["signing_algorithm"] = context.get("signing_algorithm", "RS256")
    if scenario.startswith("auth/") and "grant" not in oauth:
        oauth["client_metadata_url"] = CLIENT_METADATA_URL
    if oauth:
        entry["oauth"] = oauth
    return entry


async def _browser(url: str) -> None:
    """Follow the authorization URL; the redirect lands on tooldeck's loopback listener."""
    async with httpx2.AsyncClient(timeout=30.0) as http:
        await http.get(url, follow_redirects=True)


def _sign_in(home: Path) -> None:
    config = cfg.load(home)
    assert config is not None
    plan = cfg.oauth_plan(config.servers[SERVER], home)
    assert plan is not None
    asyncio.run(login(plan, _browser, timeout=60))


async def _accept_defaults(params: Any) -> types.ElicitResult:
    schema = getattr(params, "requested_schema", None) or {}
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    content = {k: v["default"] for k, v in props.items() if isinstance(v, dict) and "default" in v}
    return types.ElicitResult(action="accept", content=content)


def _call(rt: Runtime, tool: str, args: dict[str, Any]) -> Any:
    [result] = rt.invocation().run([{"id": f"c{time.monotonic_ns()}", "name": f"mcp__{SERVER}__{tool}",
                                     "arguments": args}])
    return result


def _needs_sign_in(result: Any) -> bool:
    return result.is_error and ("tooldeck mcp login" in (result.content or ""))


def run(url: str, scenario: str, context: dict[str, Any]) -> int:
    home = Path(tempfile.mkdtemp(prefix="tooldeck-conformance-"))
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {SERVER: _entry(url, scenario, context)}}))
    (home / "tooldeck.toml").write_text("[mcp]\nstartup_wait_s = 0\n")
    for attempt in range(3):
        with Runtime(home) as rt:
            assert rt.mcp is not None
            rt.mcp.callbacks = McpCallbacks(elicitation=_accept_defaults)
            [report] = rt.mcp.refresh(SERVER)
            if not report.ok:
                failure = report.failure
                print(f"refresh failed: {failure.code if failure else report.error}: "
                      f"{failure.full_text if failure else ''}", file=sys.stderr)
                if failure is not None and failure.code in AUTH_CODES and attempt < 2:
                    _sign_in(home)
                    continue
                return 1
            tools = [t.name for t in rt.mcp.tools(SERVER)]
            print(f"tools: {tools}", file=sys.stderr)
            again = False
            for tool in tools:
                args = {"a": 5, "b": 3} if tool == "add_numbers" else {}
                result = _call(rt, tool, args)
                print(f"{tool}: {result.error_code or 'ok'}: {result.content[:300]}", file=sys.stderr)
                if _needs_sign_in(result) and attempt < 2:
                    again = True
                    break
            if again:
                _sign_in(home)
                continue
            return 0
    return 1


def main() -> None:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    sys.exit(run(url, scenario, context))


if __name__ == "__main__":
    main()
