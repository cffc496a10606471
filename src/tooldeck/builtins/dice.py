"""`dice.roll`: roll `[N]dS[(+|-)M]` dice."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput

MAX_DICE = 100
MAX_SIDES = 1_000_000
MAX_MODIFIER = 1_000_000
INVALID_FORMULA = "dice.invalid_formula"

_NUM = r"(?:0|[1-9][0-9]*)"
_FORMULA = re.compile(
    rf"(?:(?P<count>{_NUM})?[dD](?P<sides>{_NUM})(?:(?P<sign>[+-])(?P<mod>{_NUM}))?|(?P<bare>{_NUM}))"
)
_rng = random.SystemRandom()


@dataclass(frozen=True, slots=True)
class Formula:
    count: int
    sides: int
    modifier: int

    def __str__(self) -> str:
        mod = f"{self.modifier:+d}" if self.modifier else ""
        return f"{self.count}d{self.sides}{mod}"

    @property
    def min(self) -> int:
        return self.count + self.modifier

    @property
    def max(self) -> int:
        return self.count * self.sides + self.modifier


def parse_formula(text: str) -> Formula:
    m = _FORMULA.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ToolCallError(INVALID_FORMULA, f"`{text}` is not a dice formula. Use [N]dS[+M] or [N]dS[-M] with no "
                                             "spaces, e.g. `d20`, `3d6+4`, `2d8-1`, or a bare number like `20`.")
    if m["bare"] is not None:
        count, sides, modifier = 1, int(m["bare"]), 0
    else:
        count = int(m["count"]) if m["count"] is not None else 1
        sides = int(m["sides"])
        modifier = int(m["mod"] or 0) * (-1 if m["sign"] == "-" else 1)
    if not 1 <= count <= MAX_DICE:
        raise ToolCallError(INVALID_FORMULA, f"`{text}`: the number of dice must be 1 to {MAX_DICE}.")
    if not 1 <= sides <= MAX_SIDES:
        raise ToolCallError(INVALID_FORMULA, f"`{text}`: a die must have 1 to {MAX_SIDES:,} sides.")
    if abs(modifier) > MAX_MODIFIER:
        raise ToolCallError(INVALID_FORMULA, f"`{text}`: the modifier must be within ±{MAX_MODIFIER:,}.")
    return Formula(count, sides, modifier)


def render(formula: Formula, rolls: list[int]) -> str:
    total = sum(rolls) + formula.modifier
    if len(rolls) == 1 and not formula.modifier:
        return f"Rolled {formula}: {total}."
    terms = " + ".join(str(r) for r in rolls)
    if formula.modifier:
        terms += f" {'+' if formula.modifier > 0 else '-'} {abs(formula.modifier)}"
    return f"Rolled {formula}: {terms} = {total}."


def roll(formula: Formula, rng: random.Random = _rng) -> ToolOutput:
    rolls = [rng.randint(1, formula.sides) for _ in range(formula.count)]
    total = sum(rolls) + formula.modifier
    structured = {"formula": str(formula), "rolls": rolls, "modifier": formula.modifier, "total": total,
                  "min": formula.min, "max": formula.max}
    return ToolOutput(render(formula, rolls), structured)


def handle(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    return roll(parse_formula(args["formula"].strip()))


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("dice.roll"),
    title="Roll dice",
    description="Roll dice and return each die and the total. Formula `[N]dS[+M|-M]`, e.g. `d20`, `3d6+4`, "
                "`2d8-1`; a bare number `20` means `1d20`.",
    input_schema={
        "type": "object",
        "properties": {"formula": {"type": "string", "description": "Dice formula such as `3d6+4`."}},
        "required": ["formula"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, handle)]
