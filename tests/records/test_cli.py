"""`tooldeck records list|show` and `tooldeck replay`."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from tooldeck.cli.app import app
from tooldeck.protocols import validate
from tooldeck.runtime import Runtime

runner = CliRunner()


def _record(home: Path) -> str:
    with Runtime(home) as rt:
        inv = rt.invocation("openai")
        inv.run([{"id": "call_1", "name": "dice_roll", "arguments": '{"formula": "d6"}'},
                 {"id": "call_2", "name": "dice_roll", "arguments": "[not json"}])
        return inv.id


def test_list_show_and_replay(tmp_path: Path) -> None:
    inv_id = _record(tmp_path)
    listed = runner.invoke(app, ["records", "list", "--home", str(tmp_path)], env={"COLUMNS": "250"})
    assert listed.exit_code == 0, listed.output
    assert inv_id in listed.output and "1 invocation, newest first" in listed.output

    shown = runner.invoke(app, ["records", "show", inv_id, "--home", str(tmp_path)], env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "[not json" in shown.output and "[tool.invalid_arguments]" in shown.output
    assert "completed" in shown.output and "Rolled 1d6" in shown.output

    as_json = runner.invoke(app, ["records", "show", inv_id, "--json", "--home", str(tmp_path)])
    calls = orjson.loads(as_json.stdout)["calls"]
    assert [c["raw_arguments"] for c in calls] == ['{"formula": "d6"}', "[not json"]

    for provider in ("openai", "openai_responses", "anthropic", "gemini", "mistral"):
        replayed = runner.invoke(app, ["replay", inv_id, "--provider", provider, "--home", str(tmp_path)])
        assert replayed.exit_code == 0, replayed.output
        assert validate(orjson.loads(replayed.stdout), provider) == []


def test_errors_are_usage_errors_with_advice(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["records", "list", "--home", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "records.not_found" in missing.output
    inv_id = _record(tmp_path)
    unknown = runner.invoke(app, ["records", "show", "inv_nope", "--home", str(tmp_path)])
    assert unknown.exit_code == 2 and "tooldeck records list" in unknown.output
    bad = runner.invoke(app, ["replay", inv_id, "--provider", "cohere", "--home", str(tmp_path)])
    assert bad.exit_code == 2 and "protocol.unknown_format" in bad.output
