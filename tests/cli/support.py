"""Run the real `tooldeck` command in a subprocess, and see what it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLDECK = str(Path(sys.executable).with_name("tooldeck"))
FIXTURE_SERVER = ROOT / "tests" / "mcp" / "fixtures" / "fixture_server.py"

# Runs the CLI's `main` as the console script does; at exit (main ends the process itself, after the atexit
# handlers) writes the names of the loaded modules, and whether the cyclic GC was on, to a file.
_MARKER = """
import atexit, gc, json, sys
modules_file, argv = sys.argv[1], sys.argv[2:]

def report():
    loaded = sorted(name for name, module in sys.modules.items() if module is not None)
    with open(modules_file, "w") as f:
        json.dump({"modules": loaded, "gc_enabled": gc.isenabled()}, f)

atexit.register(report)
sys.argv = ["tooldeck", *argv]
from tooldeck.cli import main
main()
"""


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    modules: set[str]
    gc_enabled: bool

    def loaded(self, package: str) -> bool:
        """`package` or any of its submodules was imported."""
        return any(m == package or m.startswith(package + ".") for m in self.modules)


def env(columns: int | None = 80, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TOOLDECK_TOKEN")}
    if columns is not None:
        out["COLUMNS"] = str(columns)
    out.update(extra)
    return out


def run_cli(tmp: Path, *args: str, columns: int | None = 80) -> Run:
    """`tooldeck ARGS` through the CLI's main in a fresh interpreter; `modules` is what it imported."""
    modules_file = tmp / f"modules-{os.getpid()}-{len(list(tmp.glob('modules-*')))}.json"
    proc = subprocess.run([sys.executable, "-c", _MARKER, str(modules_file), *args], capture_output=True,
                          text=True, timeout=120, env=env(columns), cwd=tmp)
    assert modules_file.exists(), f"the CLI ended without its atexit handlers: {proc.stderr}"
    report = json.loads(modules_file.read_text())
    modules = set(report["modules"])
    assert "tooldeck.cli.app" in modules
    return Run(proc.returncode, proc.stdout, proc.stderr, modules, report["gc_enabled"])


def tooldeck(*args: str, cwd: Path, columns: int | None = 80, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The installed `tooldeck` console script."""
    return subprocess.run([TOOLDECK, *args], capture_output=True, text=True, timeout=timeout, env=env(columns),
                          cwd=cwd)


def write_fixture_mcp(home: Path, name: str = "fx") -> None:
    """`<home>/mcp.json` with one stdio server: the MCP tests' fixture server."""
    home.mkdir(parents=True, exist_ok=True)
    servers = {name: {"command": sys.executable, "args": [str(FIXTURE_SERVER)]}}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
