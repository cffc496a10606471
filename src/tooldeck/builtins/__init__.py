"""Builtin tools. Each module exports `TOOLS: list[BuiltinTool]`; add a module here to register it."""

from __future__ import annotations

from tooldeck.builtins.registry import BuiltinTool


def default_builtins() -> list[BuiltinTool]:
    from tooldeck.builtins import dice

    return [*dice.TOOLS]
