"""Start-up: each command imports what it needs (issue 13.1). The timing is a bench
(`python -m bench.startup_bench`); these tests hold the imports that make it fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import tooldeck

from .support import run_cli, write_fixture_mcp

DICE = '{"formula": "2d6+1"}'
# Never needed by a call of a builtin tool in a home without MCP servers.
HEAVY = ("mcp", "mcp_types", "uvicorn", "starlette", "rich", "anyio", "httpx", "httpx2", "tooldeck.server",
         "tooldeck.sources.mcp.manager", "tooldeck.sources.mcp.config",
         "pydantic")  # the Profile is a typed_config class: pydantic cost ~100 ms of a call's start-up


def test_call_in_a_home_without_mcp_config_does_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    run = run_cli(tmp_path, "call", "dice_roll", DICE, "--home", str(tmp_path / "home"))
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["tool_id"] == "builtin:dice.roll" and result["content"].startswith("Rolled 2d6+1")
    assert [p for p in HEAVY if run.loaded(p)] == []
    assert run.gc_enabled  # off while it imported, on again before the call ran
    # only the command that runs is built: the other command modules are not even imported
    assert [m for m in ("tooldeck.cli.serve_cmd", "tooldeck.cli.records_cmd", "tooldeck.cli.mcp_cmd")
            if m in run.modules] == []
    # nor the shell engine (bashkit, the worker pool): the shell families load only their descriptors
    assert [m for m in ("tooldeck.shell", "tooldeck.shell.engine", "tooldeck.shell.background", "bashkit")
            if run.loaded(m)] == []


def test_the_background_schema_maximum_is_the_managers_default() -> None:
    # builtins/background.py holds the value so that its descriptor does not import the shell engine
    from tooldeck.builtins import background
    from tooldeck.shell import background as manager

    assert background.DEFAULT_TIMEOUT_S == manager.DEFAULT_TIMEOUT_S
    assert background.COMMAND.input_schema["properties"]["timeout_s"]["maximum"] == manager.DEFAULT_TIMEOUT_S


def test_tools_and_records_import_neither_the_sdk_nor_the_server(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    assert run_cli(tmp_path, "call", "dice_roll", DICE, "--home", home).returncode == 0
    for args in (["tools"], ["tools", "--json"], ["records", "list"], ["records", "list", "--json"]):
        run = run_cli(tmp_path, *args, "--home", home)
        assert run.returncode == 0, (args, run.stderr)
        assert [p for p in HEAVY if run.loaded(p)] == [], args
    run = run_cli(tmp_path, "records", "list", "--home", home)
    assert not run.loaded("tooldeck.runtime") and not run.loaded("pydantic")  # the store alone


def test_a_tooldeck_toml_without_mcp_does_not_import_the_sdk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "tooldeck.toml").write_text("[serve]\nmax_sessions = 4\n", encoding="utf-8")
    run = run_cli(tmp_path, "call", "dice_roll", DICE, "--home", str(home))
    assert run.returncode == 0, run.stderr
    assert run.loaded("tooldeck.sources.mcp.config")  # the file is read to find out
    assert not run.loaded("mcp") and not run.loaded("tooldeck.sources.mcp.manager")


def test_a_home_with_an_mcp_server_still_gets_its_tools(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_fixture_mcp(home)
    listed = run_cli(tmp_path, "tools", "--json", "--home", str(home))
    assert listed.returncode == 0, listed.stderr
    assert "mcp__fx__echo" in {t["call_name"] for t in json.loads(listed.stdout)["tools"]}
    assert listed.loaded("mcp") and listed.loaded("tooldeck.sources.mcp.manager")
    called = run_cli(tmp_path, "call", "mcp__fx__echo", '{"message": "lazy"}', "--home", str(home))
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["content"] == "Echo: lazy"
    dice = run_cli(tmp_path, "call", "dice_roll", DICE, "--home", str(home))  # builtins beside MCP tools
    assert dice.returncode == 0 and json.loads(dice.stdout)["tool_id"] == "builtin:dice.roll"


def _imports_of(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_importing_the_package_or_the_cli_loads_no_runtime() -> None:
    package = {m for m in _imports_of("import tooldeck") if m.startswith("tooldeck")}
    assert package == {"tooldeck"}
    cli = _imports_of("import tooldeck.cli.app")
    assert [m for m in cli if m.split(".")[0] in ("pydantic", "rich", "mcp", "anyio", "sqlite3", "orjson")] == []
    assert "tooldeck.runtime" not in cli and "tooldeck.cli.tools_cmd" not in cli
    mcp_package = _imports_of("import tooldeck.sources.mcp, tooldeck.sources.mcp.wiring")
    assert "mcp" not in mcp_package and "pydantic" not in mcp_package


def test_the_package_exports_resolve_on_first_use() -> None:
    public = [name for name in dir(tooldeck)
              if not name.startswith("_") and not isinstance(getattr(tooldeck, name), ModuleType)]
    assert sorted(public) == sorted(n for n in tooldeck.__all__ if n != "__version__")
    for name in tooldeck.__all__:
        assert getattr(tooldeck, name) is not None
    from tooldeck.runtime import Runtime

    assert tooldeck.Runtime is Runtime
    try:
        tooldeck.nope  # noqa: B018
    except AttributeError as exc:
        assert "nope" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
