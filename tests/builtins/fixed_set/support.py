"""What the fixed-set tests share: a runtime over the test's temp dir and one-call helpers."""

from __future__ import annotations

from typing import Any

from tooldeck.core.results import AgentToolResult


def call(inv: Any, name: str, arguments: Any, call_id: str = "c1") -> AgentToolResult:
    [result] = inv.run([{"id": call_id, "name": name, "arguments": arguments}])
    return result


def names(inv: Any) -> list[str]:
    return [t["function"]["name"] for t in inv.tools()]


def state(objective: str = "Plan the trip", next_steps: list[str] | None = None) -> dict[str, Any]:
    return {"objective": objective, "completed": ["Read the brief"],
            "next_steps": ["Book it"] if next_steps is None else next_steps}

