"""`subagents` and `background_subagents` (Agenvoy, reference agenvoy §2.2 and §8): run a leg, a headless
agent run on one self-contained task (agent/delegation/subagents.py), and get its report; or start one
in the background and get its report on a later turn, like a background command's.

Both work only in a run of the agent loop; `background_subagents` only for interactive origins.
"""

from __future__ import annotations

from typing import Any

from tooldeck.builtins.background import interactive_only
from tooldeck.builtins.delegate_common import link_or_refuse
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput

UNAVAILABLE = "subagent.unavailable"
MODES = ("invoke", "list")


def _spec(args: dict[str, Any], mode: str) -> Any:
    from tooldeck.agent.delegation.subagents import LegSpec

    for key in ("task", "model"):
        value = args.get(key)
        if not isinstance(value, str) or not value.strip():
            raise ToolCallError("subagent.field_required", f"{key} is required when mode={mode}")
    return LegSpec(task=args["task"].strip(), model=args["model"].strip(), name=args.get("name") or None,
                   session_id=args.get("session_id") or None, reasoning=args.get("reasoning") or "low",
                   system_prompt=args.get("system_prompt") or None, exclude_tools=list(args.get("exclude_tools") or ()),
                   report_name=args.get("report_name") or None, new=bool(args.get("new")))


async def subagents(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or ("invoke" if args.get("task") else "list")
    if mode not in MODES:
        raise ToolCallError("subagent.unknown_mode", f'unknown mode "{mode}"; available: {", ".join(MODES)}')
    link = link_or_refuse(ctx, UNAVAILABLE)
    if mode == "list":
        import asyncio

        from tooldeck.agent.delegation.sessions import Sessions

        text, sessions = await asyncio.to_thread(Sessions(link.runtime.home).describe)
        return ToolOutput(text, {"sessions": sessions})
    from tooldeck.agent.delegation.subagents import run_leg

    spec = _spec(args, "invoke")
    text, structured = await run_leg(link, ctx, spec, f"leg_{ctx.call_id}")
    return ToolOutput(text, structured, resource_refs=[structured["report"]])


async def background_subagents(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    link = link_or_refuse(ctx, UNAVAILABLE)
    from tooldeck.agent.delegation.subagents import model_for, start_background

    spec = _spec(args, "invoke")
    model_for(link, spec.model)  # an unknown model is refused now, not in the report
    leg = start_background(link, ctx, spec)
    return ToolOutput(f"Started subagent leg {leg.id} in the background ({spec.model}). Its report will arrive on a "
                      "later turn; continue with other work.", {"task_id": leg.id, "model": spec.model})


_LEG_PROPERTIES: dict[str, Any] = {
    "task": {"type": "string", "description": "The leg's whole task, self-contained: the leg sees none of this "
                                              "conversation."},
    "model": {"type": "string", "description": "A registered model name (tooldeck.toml [models], or yours)."},
    "name": {"type": "string", "description": "A named session to reuse: the leg gets its role and continues its "
                                              "conversation. With `system_prompt`, a new named session. Otherwise "
                                              "the leg runs in a temp session (no past)."},
    "session_id": {"type": "string", "description": "A session id to run in."},
    "reasoning": {"type": "string", "enum": ["low", "medium", "high"], "default": "low",
                  "description": "How hard the leg's model reasons (its reasoning effort or thinking budget)."},
    "system_prompt": {"type": "string", "description": "The leg's role, added to the Subagent Charter."},
    "exclude_tools": {"type": "array", "items": {"type": "string"},
                      "description": "More tools the leg must not have (call names or tool ids)."},
    "report_name": {"type": "string", "description": "A name for the report file."},
    "new": {"type": "boolean", "description": "Ignore the named session's past conversation: it starts over with "
                                              "this leg."},
}

SUBAGENTS = ToolDescriptor(
    id=ToolId.builtin("subagents"),
    title="Run subagent legs",
    description=(
        "Run a subagent leg on one self-contained task and get its report, or list the named sessions. `mode`: "
        "`invoke` (default when `task` is given) or `list`. A leg is a fresh agent run in this workspace with the "
        "Subagent Charter (collect and report, text only) and fewer tools; call it several times in one turn to "
        "fan out (at most 3 legs run at once, the rest wait). The answer is a header with the model, session and "
        "usage, and the path of the report file to read."
    ),
    input_schema={"type": "object", "properties": {"mode": {"type": "string", "description": "`invoke` or `list`."},
                                                   **_LEG_PROPERTIES},
                  "additionalProperties": False},
    annotations=ToolAnnotations(concurrency_safe=True),
)

BACKGROUND = ToolDescriptor(
    id=ToolId.builtin("background.subagents"),
    title="Start a subagent leg in the background",
    description=(
        "Start a subagent leg (as `subagents` mode `invoke`) in the background and get a task id at once. When the "
        "leg completes, its report (the header and the path of its report file) arrives on a later turn, like a "
        "background command's."
    ),
    input_schema={"type": "object", "properties": _LEG_PROPERTIES, "required": ["task", "model"],
                  "additionalProperties": False},
    annotations=ToolAnnotations(),
    available=interactive_only,
)

TOOLS = [BuiltinTool(SUBAGENTS, subagents), BuiltinTool(BACKGROUND, background_subagents)]
