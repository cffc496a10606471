import json
import subprocess
import sys

import pytest

TOOLDECK = [sys.executable, "-m", "tooldeck.cli"]


def run(*args, home):
    return subprocess.run([*TOOLDECK, *args, "--home", str(home)], capture_output=True, text=True, timeout=60)


MISSING_FORMULA = ("Invalid arguments for `dice_roll`: missing required field `formula` (string; Dice formula such "
                   "as `3d6+4`.). Fix the arguments and call again.")


@pytest.mark.parametrize(("raw", "code", "content"), [
    ('{"formula": "d20"}', None, None),
    # not an object: refused when decoded, before the schema is looked at
    ("[1,2]", "tool.invalid_arguments",
     "Arguments must be a JSON object; send `{}` when the call takes no arguments. Received: `[1,2]`"),
    # empty and null mean "no arguments" (`{}`), which the schema then refuses
    ("", "tool.invalid_arguments", MISSING_FORMULA),
    ("null", "tool.invalid_arguments", MISSING_FORMULA),
])
def test_call_prints_the_result_and_exits_zero_even_for_tool_errors(tmp_path, raw, code, content):
    proc = run("call", "dice_roll", raw, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert list(out) == ["call_id", "tool_id", "content", "structured", "is_error", "error_code", "resource_refs"]
    assert out["error_code"] == code
    assert out["tool_id"] == "builtin:dice.roll"
    if code:
        assert out["content"] == content and out["is_error"] is True
    else:
        roll = out["structured"]
        assert out["is_error"] is False and roll["formula"] == "1d20" and (roll["min"], roll["max"]) == (1, 20)
        assert 1 <= roll["total"] <= 20 and roll["rolls"] == [roll["total"]]
        assert out["content"] == f"Rolled 1d20: {roll['total']}."


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


def test_fail_exits_one_for_an_error_result_and_zero_for_a_good_one(tmp_path):
    proc = run("call", "dice_roll", "[1,2]", "--fail", home=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error_code"] == "tool.invalid_arguments"
    proc = run("call", "nope", "--fail", home=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error_code"] == "tool.unknown_tool"
    proc = run("call", "dice_roll", '{"formula": "1d6"}', "--fail", home=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["is_error"] is False
