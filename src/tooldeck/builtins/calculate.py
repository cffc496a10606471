"""`calculate` (Agenvoy's tool of the same name): evaluate a batch of arithmetic expressions exactly.

The answer maps each expression to its result or to `error: …`, so one bad expression does not
hide the others. The language is `calc_expr`'s (docs/configuration.md, "Optional builtins").
"""

from __future__ import annotations

from typing import Any, Final

from tooldeck.builtins.calc_expr import MAX_EXPRESSION_CHARS, CalcError, evaluate, format_number
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

MAX_EXPRESSIONS: Final = 100


def calculate(expressions: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for expression in expressions:
        try:
            out[expression] = format_number(evaluate(expression))
        except CalcError as exc:
            out[expression] = f"error: {exc}"
    return out


def handle(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    results = calculate(args["expressions"])
    return ToolOutput(json_text(results), {"results": results})


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("calculate"),
    title="Calculate",
    description="Evaluate arithmetic expressions exactly; returns {expression: result or \"error: …\"}. "
                "Integers stay exact (`/` and `%` on integers truncate: 10/3 = 3; write 10.0/3 for 3.333…). "
                "Operators + - * / % ^ (power) and parentheses; functions sqrt abs ceil floor round log log2 "
                "log10 sin cos tan pow min max; constants pi, e.",
    input_schema={
        "type": "object",
        "properties": {
            "expressions": {
                "type": "array",
                "items": {"type": "string", "maxLength": MAX_EXPRESSION_CHARS},
                "minItems": 1,
                "maxItems": MAX_EXPRESSIONS,
                "description": "Expressions to evaluate, e.g. [\"2^64\", \"sqrt(2)*10\", \"(17+5)%7\"].",
            },
        },
        "required": ["expressions"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, handle)]
