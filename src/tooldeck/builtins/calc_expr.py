"""The expression language of `calculate` (Agenvoy's): a tokenizer and a recursive-descent parser that
evaluates as it parses. Never `eval`.

Numbers are exact integers unless written with a `.` or an exponent (`2.5`, `1e3`); integer
arithmetic stays exact (`1000000000*1000000000`), `/` and `%` on two integers truncate toward zero
as in Go (`10/3` = 3, `-7/2` = -3, `-7%2` = -1). `^` is power (right-associative, above unary minus:
`-2^2` = -4). Functions: sqrt abs ceil floor round log log2 log10 sin cos tan pow min max; constants
`pi` and `e`. Every failure is a `CalcError` whose text says what is wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

Number = int | float

MAX_EXPRESSION_CHARS: Final = 2_000
MAX_DEPTH: Final = 64
MAX_RESULT_DIGITS: Final = 4_000
"""About as many decimal digits as an exact integer may have (Python prints at most 4,300)."""
_MAX_BITS: Final = int(MAX_RESULT_DIGITS * math.log2(10))
_TOO_LARGE: Final = f"the result is too large (the limit is about {MAX_RESULT_DIGITS:,} digits)"

_TOKEN = re.compile(r"(?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                    r"|(?P<op>[-+*/%^(),])")
_SPACE = frozenset(" \t\r\n")


class CalcError(ValueError):
    """An expression that cannot be evaluated; `str()` is the message shown after `error: `."""


def _truncating_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _truncating_mod(a: int, b: int) -> int:
    return a - b * _truncating_div(a, b)


def _check_int(value: int) -> int:
    if value.bit_length() > _MAX_BITS:
        raise CalcError(_TOO_LARGE)
    return value


def _finite(value: float, what: str) -> float:
    if math.isnan(value) or math.isinf(value):
        raise CalcError(f"{what} is not a finite number")
    return value


def _as_float(value: Number) -> float:
    try:
        return float(value)
    except OverflowError:
        raise CalcError("a number is too large for floating-point arithmetic") from None


def _power(base: Number, exp: Number) -> Number:
    if isinstance(base, int) and isinstance(exp, int) and exp >= 0:
        if base not in (0, 1, -1) and exp * max(base.bit_length() - 1, 1) > _MAX_BITS:
            raise CalcError(_TOO_LARGE)
        return _check_int(base**exp)
    b, x = _as_float(base), _as_float(exp)
    if b == 0 and x < 0:
        raise CalcError("zero cannot be raised to a negative power")
    if b < 0 and not x.is_integer():
        raise CalcError("a negative number cannot be raised to a fractional power")
    try:
        return _finite(math.pow(b, x), "the power")
    except OverflowError:
        raise CalcError("the power is too large") from None


def _unary(name: str, fn: Callable[[float], float], domain: Callable[[float], bool] | None = None,
           why: str = "") -> tuple[int, int, Callable[..., Number]]:
    def call(x: Number) -> Number:
        f = _as_float(x)
        if domain is not None and not domain(f):
            raise CalcError(f"{name}({_text(x)}) is undefined: {why}")
        return _finite(fn(f), f"{name}({_text(x)})")
    return 1, 1, call


def _rounding(fn: Callable[[float], int]) -> Callable[..., Number]:
    def call(x: Number) -> Number:
        if isinstance(x, int):
            return x
        return fn(_finite(x, "the argument"))
    return call


def _round_half_away(x: float) -> int:
    whole = math.floor(abs(x))
    if abs(x) - whole >= 0.5:  # exact for floats, unlike floor(x + 0.5) (0.49999999999999994 rounds to 1)
        whole += 1
    return whole if x >= 0 else -whole


def _extreme(pick: Callable[..., Number]) -> Callable[..., Number]:
    return lambda *xs: pick(xs)


FUNCTIONS: Final[dict[str, tuple[int, int | None, Callable[..., Number]]]] = {
    "sqrt": _unary("sqrt", math.sqrt, lambda x: x >= 0, "the argument is negative"),
    "log": _unary("log", math.log, lambda x: x > 0, "the argument must be positive"),
    "log2": _unary("log2", math.log2, lambda x: x > 0, "the argument must be positive"),
    "log10": _unary("log10", math.log10, lambda x: x > 0, "the argument must be positive"),
    "sin": _unary("sin", math.sin, math.isfinite, "the argument is not finite"),
    "cos": _unary("cos", math.cos, math.isfinite, "the argument is not finite"),
    "tan": _unary("tan", math.tan, math.isfinite, "the argument is not finite"),
    "abs": (1, 1, abs),
    "ceil": (1, 1, _rounding(math.ceil)),
    "floor": (1, 1, _rounding(math.floor)),
    "round": (1, 1, _rounding(_round_half_away)),
    "pow": (2, 2, _power),
    "min": (1, None, _extreme(min)),
    "max": (1, None, _extreme(max)),
}
"""name -> (least arguments, most arguments or None, implementation)."""
CONSTANTS: Final[dict[str, float]] = {"pi": math.pi, "e": math.e}


def _text(value: Number) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e16:
        return f"{value:.1f}"
    return repr(value)


def format_number(value: Number) -> str:
    """The result as the model sees it: an integer exactly, a float in its shortest round-trip form."""
    return _text(value)


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise CalcError("the expression ends too early")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect(self, op: str) -> None:
        kind, value = self.take() if self.pos < len(self.tokens) else ("end", "")
        if value != op or kind != "op":
            found = f"`{value}`" if kind != "end" else "the end"
            raise CalcError(f"expected `{op}` but found {found}")

    def parse(self) -> Number:
        if not self.tokens:
            raise CalcError("the expression is empty")
        value = self.sum()
        if self.pos < len(self.tokens):
            raise CalcError(f"unexpected `{self.tokens[self.pos][1]}` after a complete expression")
        return value

    def sum(self) -> Number:
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            right = self.product()
            value = value + right if op == "+" else value - right
            value = _check_int(value) if isinstance(value, int) else _finite(value, "the result")
        return value

    def product(self) -> Number:
        value = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()[1]
            right = self.unary()
            value = _binary(op, value, right)
        return value

    def unary(self) -> Number:
        if self.peek() in ("+", "-"):
            op = self.take()[1]
            self.enter()
            try:
                value = self.unary()
            finally:
                self.depth -= 1
            return -value if op == "-" else value
        return self.power()

    def power(self) -> Number:
        base = self.atom()
        if self.peek() == "^":
            self.take()
            self.enter()
            try:
                exp = self.unary()  # right-associative; `2^-1` is allowed
            finally:
                self.depth -= 1
            return _power(base, exp)
        return base

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalcError(f"the expression nests deeper than {MAX_DEPTH} levels")

    def atom(self) -> Number:
        kind, value = self.take()
        if kind == "num":
            return _number(value)
        if kind == "name":
            return self.name(value)
        if value == "(":
            self.enter()
            try:
                inner = self.sum()
            finally:
                self.depth -= 1
            self.expect(")")
            return inner
        raise CalcError(f"unexpected `{value}`; expected a number, a function or `(`")

    def name(self, name: str) -> Number:
        key = name.lower()
        if self.peek() != "(":
            if key in CONSTANTS:
                return CONSTANTS[key]
            if key in FUNCTIONS:
                raise CalcError(f"function `{name}` needs its arguments in parentheses, e.g. `{key}(2)`")
            raise CalcError(f"unknown name `{name}`; the functions are {', '.join(FUNCTIONS)} and the constants "
                            "are pi and e")
        if key not in FUNCTIONS:
            raise CalcError(f"unknown function `{name}`; the functions are {', '.join(FUNCTIONS)}")
        least, most, fn = FUNCTIONS[key]
        self.take()
        self.enter()
        try:
            args = self.arguments()
        finally:
            self.depth -= 1
        if len(args) < least or (most is not None and len(args) > most):
            want = f"{least}" if least == most else f"at least {least}"
            raise CalcError(f"{key}() takes {want} argument{'s' if want != '1' else ''}, got {len(args)}")
        return fn(*args)

    def arguments(self) -> list[Number]:
        args: list[Number] = []
        if self.peek() == ")":
            self.take()
            return args
        while True:
            args.append(self.sum())
            kind, value = self.take() if self.pos < len(self.tokens) else ("end", "")
            if value == ")" and kind == "op":
                return args
            if value != "," or kind != "op":
                raise CalcError("expected `,` or `)` in the argument list")


def _binary(op: str, a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        if op == "*":
            if a.bit_length() + b.bit_length() > _MAX_BITS + 1:
                raise CalcError(_TOO_LARGE)
            return _check_int(a * b)
        if b == 0:
            raise CalcError("division by zero" if op == "/" else "modulo by zero")
        return _truncating_div(a, b) if op == "/" else _truncating_mod(a, b)
    x, y = _as_float(a), _as_float(b)
    if op == "*":
        return _finite(x * y, "the result")
    if y == 0:
        raise CalcError("division by zero" if op == "/" else "modulo by zero")
    return _finite(x / y if op == "/" else math.fmod(x, y), "the result")


def _number(text: str) -> Number:
    if any(c in text for c in ".eE"):
        value = float(text)
        return _finite(value, f"`{text}`")
    return int(text)  # at most MAX_EXPRESSION_CHARS digits, well within Python's int-to-text limit


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos] in _SPACE:
            pos += 1
            continue
        m = _TOKEN.match(text, pos)
        if m is None:
            raise CalcError(f"unexpected character {text[pos]!r} at position {pos + 1}")
        kind = m.lastgroup or "op"
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


def evaluate(expression: str) -> Number:
    """The value of one expression; raises `CalcError`."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalcError(f"the expression is longer than {MAX_EXPRESSION_CHARS:,} characters")
    return _Parser(expression).parse()
