import random

import pytest

from tooldeck.builtins.dice import parse_formula, render, roll
from tooldeck.core.errors import ToolCallError


def test_plain_number_is_a_single_die():
    f = parse_formula("20")
    assert (f.count, f.sides, f.modifier, str(f)) == (1, 20, 0, "1d20")


def test_default_count_and_modifier():
    f = parse_formula("d6-2")
    assert (f.count, f.sides, f.modifier, f.min, f.max) == (1, 6, -2, -1, 4)
    f = parse_formula("3D6+4")
    assert (f.count, f.sides, f.modifier, f.min, f.max, str(f)) == (3, 6, 4, 7, 22, "3d6+4")


@pytest.mark.parametrize("bad", ["", "d", "0d6", "1d0", "101d6", "1d1000001", "1d6+1000001", "1 d6", "1d6 + 1",
                                 "01d6", "1d06", "1d6+01", "2d6d6", "d6+", "-3", "abc", "1d6*2", "1.5d6"])
def test_rejects_invalid_or_unbounded_formulas(bad):
    with pytest.raises(ToolCallError) as err:
        parse_formula(bad)
    assert err.value.code == "dice.invalid_formula"


def test_render_single_and_modified_rolls():
    assert render(parse_formula("1d20"), [14]) == "Rolled 1d20: 14."
    assert render(parse_formula("3d6+4"), [2, 5, 6]) == "Rolled 3d6+4: 2 + 5 + 6 + 4 = 17."
    assert render(parse_formula("1d6-2"), [3]) == "Rolled 1d6-2: 3 - 2 = 1."
    assert render(parse_formula("2d4"), [1, 2]) == "Rolled 2d4: 1 + 2 = 3."


def test_roll_returns_structured_result():
    out = roll(parse_formula("100d1000000-1000000"), random.Random(7))
    s = out.structured
    assert s["formula"] == "100d1000000-1000000" and len(s["rolls"]) == 100
    assert s["total"] == sum(s["rolls"]) - 1_000_000
    assert s["min"] == 100 - 1_000_000 and s["max"] == 100 * 1_000_000 - 1_000_000


def test_dice_through_the_pipeline(make_runtime):
    inv = make_runtime().invocation()
    r1, r2 = inv.run([{"id": "1", "name": "dice_roll", "arguments": '{"formula": " 2d6+1 "}'},
                      {"id": "2", "name": "dice_roll", "arguments": {"formula": "1d6 +1"}}])
    assert r1.tool_id == "builtin:dice.roll" and r1.content.startswith("Rolled 2d6+1: ")
    assert 3 <= r1.structured["total"] <= 13
    assert r2.is_error and r2.error_code == "dice.invalid_formula"
