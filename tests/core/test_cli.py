import json
import subprocess
import sys

import pytest

TOOLDECK = [sys.executable, "-m", "tooldeck.cli"]


def run(*args, home):
    return subprocess.run([*TOOLDECK, *args, "--home", str(home)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("raw", "code"), [('{"formula": "d20"}', None), ("[1,2]", "tool.invalid_arguments"),
                                           ("", "tool.invalid_arguments"), ("null", "tool.invalid_arguments")])
def test_call_prints_the_result_and_exits_zero_even_for_tool_errors(tmp_path, raw, code):
    proc = run("call", "dice_roll", raw, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == ["call_id", "tool_id", "content", "structured", "is_error", "error_code", "resource_refs"]
    assert out["error_code"] == code
    assert out["tool_id"] == "builtin:dice.roll"
    if code:
        assert "missing required field `formula`" in out["content"] or "JSON object" in out["content"]


def test_unknown_tool_is_a_result_and_bad_usage_exits_two(tmp_path):
    proc = run("call", "nope", home=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["error_code"] == "tool.unknown_tool"
    proc = run("call", "dice_roll", "{}", "--provider", "nope", home=tmp_path)
    assert proc.returncode == 2 and "provider" in proc.stderr
    proc = subprocess.run([*TOOLDECK, "call"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2


def test_tools_json_shows_the_snapshot(tmp_path):
    proc = run("tools", "--json", "--provider", "anthropic", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    dice = next(t for t in data["tools"] if t["call_name"] == "dice_roll")
    assert dice["tool_id"] == "builtin:dice.roll" and dice["parameters"]["required"] == ["formula"]
    assert any(t["name"] == "dice_roll" and "input_schema" in t for t in data["tools_array"])
    proc = run("tools", home=tmp_path)
    assert proc.returncode == 0 and "dice_roll" in proc.stdout
