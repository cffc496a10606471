"""What the delegation builtins share: the run's link, the checks of a completion tool, task packets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tooldeck.catalog.sources import CallContext
from tooldeck.core.errors import ToolCallError
from tooldeck.workspace import errors as E

INVALID = "tool.invalid_arguments"
MAX_FIELD_CHARS = 8_000


def link_or_refuse(ctx: CallContext, code: str) -> Any:
    """The run's delegation link (agent/delegation/link.py), or `code` when no agent loop drives the run."""
    from tooldeck.agent.delegation.link import link_of

    link = link_of(ctx.run)
    if link is None:
        raise ToolCallError(code, f"`{ctx.call_name}` works only in a run of the agent loop (`rt.agent(...).run`, "
                            "`tooldeck run`); this invocation is not driven by one.")
    return link


def completion_checks(ctx: CallContext) -> None:
    """A completion tool must be the last call of its turn, after no failed call (as `workspace_finish`)."""
    turn = ctx.turn
    failed = turn.failed_before(ctx.index)
    if failed:
        names = ", ".join(dict.fromkeys(f"`{turn.call_names[i]}`" for i in failed))
        raise ToolCallError(E.FINISH_AFTER_FAILED_CALL, f"{names} failed earlier in this turn; fix it, then call "
                            f"`{ctx.call_name}`.")
    after = len(turn.call_names) - 1 - ctx.index
    if after > 0:
        raise ToolCallError(E.TOOL_AFTER_FINISH, f"{ctx.call_name} must be the final tool call in a model turn; "
                            "complete the other work first, then call it again.")


def packet_problem(packet: Any, name: str, required: str, optional: Iterable[str]) -> str | None:
    """TauriTavern's checks of a task / handoff packet: an object, `required` a non-empty string, the
    optional ones strings when given, every one at most 8,000 characters."""
    if not isinstance(packet, Mapping):
        return f"{name} must be an object"
    value = packet.get(required)
    if not isinstance(value, str) or not value.strip():
        return f"{name}.{required} must be a non-empty string"
    if len(value.strip()) > MAX_FIELD_CHARS:
        return f"{name}.{required} must be <= {MAX_FIELD_CHARS} chars"
    for key in optional:
        value = packet.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            return f"{name}.{key} must be a string when provided"
        if len(value.strip()) > MAX_FIELD_CHARS:
            return f"{name}.{key} must be <= {MAX_FIELD_CHARS} chars"
    return None


def call_name(ctx: CallContext, tool_id: str, default: str) -> str:
    for b in ctx.invocation.snapshot.bindings:
        if b.tool_id == tool_id:
            return b.call_name
    return default


def load_target(ctx: CallContext, link: Any, raw_id: Any, candidates: str) -> Any:
    """The target agent profile, or the recoverable error: a bad id, a missing or broken profile file."""
    from tooldeck.agent.delegation import profiles
    from tooldeck.core.errors import TooldeckError

    problem = profiles.check_id(raw_id.strip() if isinstance(raw_id, str) else raw_id)
    if problem:
        raise ToolCallError(INVALID, problem)
    agent_id = raw_id.strip()
    home = link.runtime.home
    try:
        target = profiles.load_agent(home, agent_id)
    except TooldeckError as exc:
        raise ToolCallError(exc.code, f"{exc.message}. Fix the file or call another Agent.") from None
    if target is None:
        known = [a for a in profiles.agent_files(home) if a != link.me.id]
        raise ToolCallError("agent.target_profile_not_found", f"Agent `{agent_id}` not found (no "
                            f"agents/{agent_id}.toml in the tooldeck home). {candidates}: "
                            f"{', '.join(known) or 'none'}.")
    return target


def check_model(target: Any, link: Any, code: str) -> None:
    """The target's model must resolve before anything starts."""
    if not target.model:
        return
    from tooldeck.agent.models import resolve_model
    from tooldeck.core.errors import TooldeckError

    try:
        resolve_model(link.runtime.home, target.model)
    except TooldeckError as exc:
        raise ToolCallError(code, f"agent.target_model_invalid: Agent `{target.id}`'s model cannot be used: "
                            f"{exc.message}") from None
