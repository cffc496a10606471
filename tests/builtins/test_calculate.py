"""`calculate`: the expression language (Agenvoy's cases), its limits, a property test against exact
Python arithmetic, and the tool through a real Runtime with records on."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tooldeck.builtins.calc_expr import CalcError, evaluate, format_number
from tooldeck.builtins.calculate import calculate


@pytest.mark.parametrize(("expression", "expected"), [
    ("10/3", "3"), ("5.0/2.0", "2.5"), ("2^3", "8"), ("-2^2", "-4"), ("2^3^2", "512"), ("+-+3", "-3"),
    ("1000000000*1000000000", "1000000000000000000"), ("-7/2", "-3"), ("-7%2", "-1"), ("7%-2", "1"),
    ("((1+2))*3", "9"), ("2^-1", "0.5"), ("10.0/3", "3.3333333333333335"), ("sqrt(16)", "4.0"),
    ("pow(2, 10)", "1024"), ("min(3, 1.5, 2)", "1.5"), ("max(-1,-2)", "-1"), ("round(2.5)", "3"),
    ("round(-2.5)", "-3"), ("round(0.49999999999999994)", "0"), ("round(-0.5)", "-1"),
    ("ceil(1.2)", "2"), ("floor(-1.2)", "-2"), ("abs(-2^70)", str(2**70)),
    ("log10(1000)", "3.0"), ("log2(8)", "3.0"), ("1e3", "1000.0"), (".5 * 4", "2.0"), ("PI", repr(math.pi)),
    ("2^200", str(2**200)), ("  1 +\t2 ", "3"), ("3^2000", str(3**2000)),
])
def test_values(expression: str, expected: str) -> None:
    assert format_number(evaluate(expression)) == expected


@pytest.mark.parametrize(("expression", "message"), [
    ("1/0", "division by zero"), ("1%0", "modulo by zero"), ("1.0/0", "division by zero"),
    ("1.5%0.0", "modulo by zero"), ("sqrt(-1)", "sqrt(-1) is undefined"), ("log(0)", "log(0) is undefined"),
    ("log(-1)", "log(-1) is undefined"), ("pow(2)", "pow() takes 2 arguments, got 1"),
    ("sqrt()", "sqrt() takes 1 argument, got 0"), ("min()", "min() takes at least 1 argument"),
    ("foo(1)", "unknown function `foo`"), ("x + 1", "unknown name `x`"), ("sqrt", "needs its arguments"),
    ("9^9^9", "too large"), ("2^20000", "too large"), ("10^400.0", "too large"), ("1e400", "not a finite"),
    ("", "empty"), ("1+", "ends too early"), ("(1", "expected `)`"), ("1 2", "unexpected `2`"),
    ("2 $ 3", "unexpected character '$' at position 3"), ("(" * 65 + "1" + ")" * 65, "nests deeper"),
    ("-" * 70 + "1", "nests deeper"), ("0^-1", "zero cannot be raised"), ("(-8)^0.5", "fractional power"),
    ("pow(1,2,3)", "takes 2 arguments, got 3"), ("x" * 2001, "longer than"),
    ("sin(1e308*10)", "not a finite"), ("٣+1", "unexpected character"),
])
def test_errors(expression: str, message: str) -> None:
    with pytest.raises(CalcError) as caught:
        evaluate(expression)
    assert message in str(caught.value)


def test_a_batch_keeps_every_answer_and_its_errors() -> None:
    assert calculate(["1+1", "1/0", "2^10"]) == {"1+1": "2", "1/0": "error: division by zero", "2^10": "1024"}


_ints = st.integers(min_value=-(10**30), max_value=10**30)


@st.composite
def int_expressions(draw: st.DrawFn, depth: int = 0) -> tuple[str, int | None]:
    """An integer expression and its exact value (None when it divides by zero)."""
    if depth > 4 or draw(st.booleans()):
        n = draw(_ints)
        return (f"({n})" if n < 0 else str(n)), n
    op = draw(st.sampled_from("+-*/%"))
    left, a = draw(int_expressions(depth + 1))
    right, b = draw(int_expressions(depth + 1))
    text = f"({left} {op} {right})"
    if a is None or b is None:
        return text, None
    if op in "/%" and b == 0:
        return text, None
    if op == "+":
        return text, a + b
    if op == "-":
        return text, a - b
    if op == "*":
        return text, a * b
    q = (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1)
    return text, q if op == "/" else a - b * q


@settings(derandomize=True, max_examples=400, deadline=None)
@given(int_expressions())
def test_integer_arithmetic_is_exact_and_truncates_like_go(case: tuple[str, int | None]) -> None:
    text, value = case
    if value is None:
        with pytest.raises(CalcError, match="by zero"):
            evaluate(text)
    else:
        assert evaluate(text) == value


@settings(derandomize=True, max_examples=600, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789.eE+-*/%^(), \tpisqrtlogminax_$")), max_size=60))
def test_any_text_gives_a_number_or_a_calc_error(text: str) -> None:
    try:
        value = evaluate(text)
    except CalcError as exc:
        assert str(exc)
    else:
        assert isinstance(value, int) or math.isfinite(value)
        format_number(value)


def test_the_tool_through_a_runtime_is_opt_in_and_recorded(make_runtime: MakeRuntime) -> None:
    default = make_runtime(home="default", loading="eager")
    inv = default.invocation()
    assert "calculate" not in inv.call_names()
    [refused] = inv.run([{"id": "c0", "name": "calculate", "arguments": {"expressions": ["1+1"]}}])
    assert refused.is_error

    rt = make_runtime(home="opted", loading="eager", allow=["builtin:calculate"])
    inv = rt.invocation()
    assert inv.call_names() == {"calculate": "builtin:calculate"}
    [ok, bad] = inv.run([{"id": "c1", "name": "calculate", "arguments": '{"expressions": ["2^64", "sqrt(-4)"]}'},
                         {"id": "c2", "name": "calculate", "arguments": {"expressions": []}}])
    assert not ok.is_error and json.loads(ok.content) == {"2^64": str(2**64), "sqrt(-4)":
                                                          "error: sqrt(-4) is undefined: the argument is negative"}
    assert bad.is_error and bad.error_code == "tool.invalid_arguments"
    rt.close()
    db = sqlite3.connect(rt.home / "records.sqlite")
    assert str(2**64) in " ".join(str(row) for row in db.execute("SELECT * FROM results"))
