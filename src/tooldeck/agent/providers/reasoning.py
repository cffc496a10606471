"""A request's reasoning effort (`ModelRequest.reasoning`: low | medium | high; a subagent leg's
`reasoning`, default low) in each provider's wire form (docs/agent.md, "Reasoning effort"):

- OpenAI Chat Completions: `reasoning_effort: "<effort>"`;
- OpenAI Responses: `reasoning: {"effort": "<effort>"}`;
- Anthropic: extended thinking, `thinking: {"type": "enabled", "budget_tokens": B}`, and `max_tokens`
  raised by B (the budget is part of `max_tokens`, so the answer keeps its own limit). Left off when
  the tool choice forces a tool: the API refuses thinking with a forced tool;
- Gemini: `generationConfig.thinkingConfig.thinkingBudget: B`.

B is `THINKING_BUDGETS[effort]`: within every thinking model's range (Anthropic's minimum is 1024,
Gemini 2.5 Flash's maximum 24576), and small enough that Anthropic's default 8192 plus the high budget
stays under the smallest output limit of its thinking models (32000, Claude Opus 4). A model
configured with `reasoning = false` gets none of these (one that rejects the field, such as a
non-reasoning OpenAI model); a model's `options` are merged after them and win.
"""

from __future__ import annotations

from typing import Any

EFFORTS = ("low", "medium", "high")
THINKING_BUDGETS: dict[str, int] = {"low": 2048, "medium": 8192, "high": 16384}


def effort_of(value: Any) -> str | None:
    """The effort to send, or None; anything but the three efforts is a programming error of the caller."""
    if value is None:
        return None
    if value not in EFFORTS:
        raise ValueError(f"reasoning effort {value!r} must be one of {', '.join(EFFORTS)}")
    return str(value)


def thinking_budget(value: str) -> int:
    return THINKING_BUDGETS[value]
