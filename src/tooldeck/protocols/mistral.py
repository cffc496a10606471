"""Mistral chat: the OpenAI Chat shape, but call ids are exactly 9 characters of [A-Za-z0-9].
Replay rewrites other ids deterministically (`protocols.ids`), on the call and its result alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooldeck.protocols import openai_chat
from tooldeck.protocols.common import DecodedCall, ReplayTurn, Violation

FAMILY = "mistral"
ITEM_KINDS = openai_chat.ITEM_KINDS


def item_problem(item: Mapping[str, Any]) -> str | None:
    return openai_chat.item_problem(item)


def items(response: Any) -> list[dict[str, Any]]:
    return openai_chat.items(response)


def render(turns: Sequence[ReplayTurn]) -> list[dict[str, Any]]:
    return openai_chat.render(turns, FAMILY)


def decode(response: Any) -> list[DecodedCall]:
    return openai_chat.decode(response)


def validate(messages: Sequence[Mapping[str, Any]]) -> list[Violation]:
    return openai_chat.validate(messages, fmt="mistral")
