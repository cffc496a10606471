"""The conformance kit's resources, prompts and completion scenarios against a fixture server of ours
(`conformance_content_server.py`) directly and through `tooldeck serve` (names mode `original`): every scenario
that passes directly passes through the gateway. Real processes: the fixture over streamable HTTP, the same
fixture as the stdio upstream of a real `tooldeck serve --http`, the kit's own client (Node)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.conftest import free_port, start_http, stop
from tests.server.support import Served, http_server
from tests.server.test_conformance import CLI, NODE, SUMMARY, kit  # noqa: F401 (the kit fixture)

FIXTURE = Path(__file__).resolve().with_name("conformance_content_server.py")
SCENARIOS = ["resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
             "resources-subscribe", "resources-unsubscribe", "prompts-list", "prompts-get-simple",
             "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
             "completion-complete"]


@pytest.fixture(scope="module")
def direct(kit: None) -> Iterator[str]:  # noqa: F811
    port = free_port()
    proc = start_http([sys.executable, str(FIXTURE), "--http", str(port)], port)
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


@pytest.fixture(scope="module")
def gateway(kit: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:  # noqa: F811
    home = tmp_path_factory.mktemp("home")
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"conf": {"command": sys.executable,
                                                                       "args": [str(FIXTURE)]}}}))
    with http_server(home, "--names", "original") as served:
        yield served


def _run(url: str, scenario: str) -> tuple[bool, str]:
    out = subprocess.run([str(NODE), str(CLI), "server", "--url", url, "--scenario", scenario],
                         capture_output=True, text=True, timeout=120)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    m = SUMMARY.search(text)
    assert m, text
    passed, total, failed, _warnings = map(int, m.groups())
    return failed == 0 and passed == total and out.returncode == 0, text


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_what_passes_directly_passes_through_the_gateway(direct: str, gateway: Served, scenario: str) -> None:
    ok_direct, text_direct = _run(direct, scenario)
    assert ok_direct, f"the fixture itself fails {scenario}:\n{text_direct}"
    ok_gateway, text_gateway = _run(gateway.url, scenario)
    assert ok_gateway, text_gateway
