"""The terminal views of `tooldeck run`: the rich live view (on a forced terminal) and the plain lines."""

from __future__ import annotations

import io

from rich.console import Console

from tooldeck.agent.events import AgentEvent
from tooldeck.cli.run_cmd import LiveView, PlainView

USAGE = {"input_tokens": 3, "output_tokens": 2, "cached_tokens": 0, "cache_write_tokens": 0}
EVENTS = [
    AgentEvent("run_started", {"run_id": "r", "model": {}, "task": "t"}),
    AgentEvent("turn_started", {"turn": 1}),
    AgentEvent("text", {"turn": 1, "text": "Rolling "}),
    AgentEvent("text", {"turn": 1, "text": "dice."}),
    AgentEvent("model_turn", {"turn": 1, "invocation_id": "i", "text": "Rolling dice.",
                              "calls": [{"id": "c1", "name": "dice_roll"}], "stop_reason": "tool_calls",
                              "usage": USAGE}),
    AgentEvent("tool_call", {"turn": 1, "call_id": "c1", "name": "dice_roll", "arguments": '{"formula": "d6"}'}),
    AgentEvent("tool_result", {"turn": 1, "call_id": "c1", "tool_id": "builtin:dice.roll", "is_error": False,
                               "error_code": None, "content": "Rolled d6: 4"}),
    AgentEvent("turn_started", {"turn": 2}),
    AgentEvent("text", {"turn": 2, "text": "You got 4."}),
    AgentEvent("model_turn", {"turn": 2, "invocation_id": "j", "text": "You got 4.", "calls": [],
                              "stop_reason": "end_turn", "usage": USAGE}),
    AgentEvent("run_finished", {"status": "completed", "completed_by": "answer", "text": "You got 4.", "reply": None,
                                "usage": USAGE, "turns": 2, "error_code": None, "error": None}),
]


def test_the_live_view_prints_each_turn_and_the_status() -> None:
    buffer = io.StringIO()
    view = LiveView(Console(file=buffer, force_terminal=True, width=100, color_system=None))
    for event in EVENTS:
        view(event)
    text = buffer.getvalue()
    for piece in ("Rolling dice.", '✓ → dice_roll {"formula": "d6"}  ← Rolled d6: 4', "You got 4.",
                  "[completed · 2 turn(s) · in=3 out=2 cached=0]"):
        assert piece in text, piece
    assert text.index("Rolling dice.") < text.index("You got 4.") < text.index("[completed")


def test_the_plain_view_splits_text_from_what_happened() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = PlainView(out, err)
    for event in EVENTS:
        view(event)
    assert out.getvalue() == "Rolling dice.\nYou got 4.\n"
    assert err.getvalue().splitlines() == ['→ dice_roll {"formula": "d6"}', "← Rolled d6: 4",
                                           "[completed · 2 turn(s) · in=3 out=2 cached=0]"]
