"""The official MCP conformance kit's server scenarios against our fixture (`conformance_content_server.py`) directly
and through `tooldeck serve` (names mode `original`), and the table of results in docs/serve.md.

`python -m tests.server.conformance_kit` runs every target and prints that table (markdown); the test
`test_conformance_gateway.py` runs the same targets and asserts, scenario by scenario, that what passes directly
passes through the gateway.

Targets: the fixture over streamable HTTP (`direct`); `tooldeck serve --http` with the fixture as its stdio upstream,
`--loading eager` and `--loading deferred` (upstream protocol `auto`: 2026-07-28), `--loading eager` with the
upstream on the handshake protocol (`"protocol": "legacy"` in mcp.json), and `--loading eager` with the fixture as a
streamable-HTTP upstream.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.mcp.conftest import free_port, start_http, stop
from tests.server.support import http_server
from tests.server.test_conformance import CLI, NODE

FIXTURE = Path(__file__).resolve().with_name("conformance_content_server.py")

SCENARIOS = [
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list", "tools-call-simple-text",
    "tools-call-image", "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
    "tools-call-with-logging", "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
    "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults", "server-sse-polling",
    "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list", "resources-read-text",
    "resources-read-binary", "resources-templates-read", "resources-subscribe", "resources-unsubscribe",
    "prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
    "prompts-get-with-image", "dns-rebinding-protection",
]
"""Every server scenario of the kit (0.1.16), in its own order (`conformance list`)."""

GATEWAYS: dict[str, tuple[str, str, str]] = {
    "eager": ("eager", "auto", "stdio"),
    "deferred": ("deferred", "auto", "stdio"),
    "eager, legacy upstream": ("eager", "legacy", "stdio"),
    "eager, HTTP upstream": ("eager", "auto", "http"),
}
"""Gateway targets: name -> (`--loading`, the upstream's `protocol` in mcp.json, the upstream's transport)."""

DEFERRED_LISTING = {
    "json-schema-2020-12": "it looks for `json_schema_2020_12_tool` in tools/list, and deferred loading lists only "
                           "find_tools, run_tool and the pinned tools; with the tool pinned (Profile `pinned`) it "
                           "passes",
}
"""Scenarios that read the tools array itself, which deferred loading keeps small by design."""
PINNED = "mcp/*:json_schema_2020_12_tool"


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    failures: list[str] = field(default_factory=list)
    ran: bool = True

    @property
    def ok(self) -> bool:
        return self.ran and self.failed == 0

    def cell(self) -> str:
        if not self.ran:
            return "not run"
        word = "pass" if self.ok else "**fail**"
        extra = f", {self.warnings} warning{'s' * (self.warnings != 1)}" if self.warnings else ""
        return f"{word} ({self.passed}/{self.passed + self.failed}{extra})"


def kit_scenarios() -> list[str]:
    """The server scenarios the installed kit lists."""
    out = subprocess.run([str(NODE), str(CLI), "list"], capture_output=True, text=True, timeout=60, check=True)
    section = out.stdout.split("Server scenarios", 1)[1].split("Client scenarios", 1)[0]
    return re.findall(r"^\s+- (\S+)", section, re.MULTILINE)


def run_suite(url: str, out_dir: Path) -> dict[str, Outcome]:
    """Every server scenario against `url` in one kit process; each scenario's checks by status."""
    done = subprocess.run([str(NODE), str(CLI), "server", "--url", url, "--suite", "all", "-o", str(out_dir)],
                          capture_output=True, text=True, timeout=600)
    outcomes: dict[str, Outcome] = {}
    for checks_file in sorted(out_dir.glob("server-*/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d\d-\d\dT[\d-]+Z$", "", checks_file.parent.name)
        outcome = outcomes[scenario] = Outcome()
        for check in json.loads(checks_file.read_text()):
            status = check.get("status")
            if status == "SUCCESS":
                outcome.passed += 1
            elif status == "FAILURE":
                outcome.failed += 1
                outcome.failures.append(f"{check.get('id')}: {check.get('errorMessage')}")
            elif status == "WARNING":
                outcome.warnings += 1
    for scenario in SCENARIOS:
        outcomes.setdefault(scenario, Outcome(ran=False, failures=[f"no results; the kit said:\n{done.stdout[-3000:]}"
                                                                    f"{done.stderr[-2000:]}"]))
    return outcomes


@contextmanager
def direct() -> Iterator[str]:
    """The fixture over streamable HTTP; yields its URL."""
    port = free_port()
    proc = start_http([sys.executable, str(FIXTURE), "--http", str(port)], port)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@contextmanager
def gateway(home: Path, loading: str, protocol: str = "auto", pinned: str | None = None,
            upstream_url: str | None = None) -> Iterator[str]:
    """`tooldeck serve --http --names original --loading LOADING` in front of the fixture (stdio, or the one at
    `upstream_url`); yields its URL."""
    home.mkdir(parents=True, exist_ok=True)
    server: dict[str, object] = ({"url": upstream_url} if upstream_url is not None
                                 else {"command": sys.executable, "args": [str(FIXTURE)]})
    server["protocol"] = protocol
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"conf": server}}))
    if pinned is not None:
        (home / "profile.toml").write_text(f'pinned = ["{pinned}"]\n')
    with http_server(home, "--names", "original", "--loading", loading) as served:
        yield served.url


def run_target(name: str, work: Path) -> dict[str, Outcome]:
    """Start one target (`direct`, a key of GATEWAYS, or `deferred, pinned`), run the suite, stop it."""
    out = work / re.sub(r"\W+", "_", name) / "results"
    if name == "direct":
        with direct() as url:
            return run_suite(url, out)
    if name == "deferred, pinned":
        with gateway(work / "pinned" / "home", "deferred", pinned=PINNED) as url:
            return run_suite(url, out)
    loading, protocol, transport = GATEWAYS[name]
    if transport == "http":
        with direct() as upstream, gateway(out.parent / "home", loading, protocol, upstream_url=upstream) as url:
            return run_suite(url, out)
    with gateway(out.parent / "home", loading, protocol) as url:
        return run_suite(url, out)


def table(results: dict[str, dict[str, Outcome]]) -> str:
    names = list(results)
    lines = ["| scenario | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for scenario in SCENARIOS:
        lines.append(f"| `{scenario}` | " + " | ".join(results[n][scenario].cell() for n in names) + " |")
    return "\n".join(lines)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: run_target(name, Path(tmp)) for name in ["direct", *GATEWAYS, "deferred, pinned"]}
    print(table(results))
    for name, outcomes in results.items():
        for scenario, outcome in outcomes.items():
            for failure in outcome.failures:
                print(f"- {name} / {scenario}: {failure}", file=sys.stderr)


if __name__ == "__main__":
    main()
