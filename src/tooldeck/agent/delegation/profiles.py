"""Agent profiles: a named Profile + instructions + model + delegation policy, one file per agent in
`<home>/agents/<id>.toml` (or `.json`), read when a delegation tool names the agent (docs/agent.md,
"Delegation and subagents").

    # <home>/agents/reviewer.toml
    description = "Checks output/main.md for continuity; returns a list of problems."
    instructions = "You review drafts. Report problems, do not rewrite."
    model = "fast"                  # a [models] name; absent: the caller's model

    [profile]                       # a tooldeck Profile (profile.toml's keys); absent: the home's Profile
    allow = ["builtin:workspace.read_file", "builtin:workspace.write_file"]

    [delegation]                    # who may call this agent, and what it may do itself
    allowed_callers = ["*"]
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tooldeck.catalog.profile import Profile
from tooldeck.core.errors import ProfileError, TooldeckError

AGENTS_DIR = "agents"
ROOT_AGENT = "main"
"""The agent id of a run started without one (`rt.agent(...)`): what `allowed_callers` names it by."""
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class DelegationPolicy(BaseModel):
    """What an agent may do with others, and what others may do with it (defaults: everything, within
    the limits)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    callable: bool = True
    """Other agents may delegate or hand off to it at all."""
    allow_as_subagent: bool = True
    """It may run as a return-mode child (`agent_delegate`)."""
    allow_as_handoff_target: bool = True
    """It may take over a run (`agent_handoff`)."""
    allowed_callers: list[str] = Field(default_factory=lambda: ["*"])
    """Agent ids that may call it (`*`: any)."""
    allowed_targets: list[str] = Field(default_factory=lambda: ["*"])
    """Agent ids it may call itself (`*`: any); another target is `agent.permission_denied`."""
    can_delegate: bool = True
    can_handoff: bool = True
    max_invocations_per_run: int = Field(8, ge=0)
    """Delegated tasks one stage of a run may start in all."""
    max_concurrent_invocations: int = Field(4, ge=1)
    """Delegated tasks of one stage that may be queued or running at once."""
    max_handoff_depth: int = Field(4, ge=0)
    """Handoffs one run may make in all."""


class AgentProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)  # Profile: typed_config
    id: str
    description: str = ""
    """For the other agents: when to call it, which paths to give it, what it returns."""
    instructions: str | None = None
    model: str | None = None
    profile: Profile | None = None
    delegation: DelegationPolicy = Field(default_factory=DelegationPolicy)


@functools.lru_cache(maxsize=64)
def default_agent(agent_id: str = ROOT_AGENT) -> AgentProfile:
    """The agent of a run without a profile file (frozen, so one is shared: a run pays no validation)."""
    return AgentProfile(id=agent_id)


def check_id(agent_id: Any) -> str | None:
    """The problem with an agent id, or None when it is one."""
    if not isinstance(agent_id, str) or not _ID.match(agent_id):
        return (f"agentId {agent_id!r} is not an agent id: lowercase letters, digits, `-` and `_`, starting with a "
                "letter or digit, at most 64 characters")
    return None


def agent_files(home: Path) -> dict[str, Path]:
    folder = home / AGENTS_DIR
    if not folder.is_dir():
        return {}
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix in (".toml", ".json") and path.is_file() and _ID.match(path.stem):
            found.setdefault(path.stem, path)
    return found


_LOADED: dict[Path, tuple[tuple[int, int], AgentProfile]] = {}
"""Agent files already parsed, by path, with the (mtime_ns, size) they had: a changed file is read again."""


def load_agent(home: Path, agent_id: str) -> AgentProfile | None:
    """The agent `agent_id` of the home (None when it has no file). A file that does not load is
    `agent.profile_invalid` (a TooldeckError naming the file and the key)."""
    path = agent_files(home).get(agent_id)
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    cached = _LOADED.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    profile = _parse(path, agent_id)
    if len(_LOADED) > 256:
        _LOADED.clear()
    _LOADED[path] = (stamp, profile)
    return profile


def _parse(path: Path, agent_id: str) -> AgentProfile:
    try:
        text = path.read_text(encoding="utf-8")
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise TooldeckError("agent.profile_invalid", f"cannot read agent profile {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise TooldeckError("agent.profile_invalid", f"agent profile {path} must be a table / JSON object")
    data = dict(data)
    try:
        profile = Profile.parse(data.pop("profile"), source=f"{path} [profile]") if "profile" in data else None
    except ProfileError as exc:
        raise TooldeckError("agent.profile_invalid", exc.message) from exc
    try:
        return AgentProfile.model_validate({**data, "id": agent_id, "profile": profile})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise TooldeckError("agent.profile_invalid", f"{path}: {problems}") from None


def caller_allowed(caller: str, target: AgentProfile) -> bool:
    return any(c in ("*", caller) for c in target.delegation.allowed_callers)


def target_allowed(caller: AgentProfile, target_id: str) -> bool:
    return any(t in ("*", target_id) for t in caller.delegation.allowed_targets)


def subagent_problem(caller: AgentProfile, target: AgentProfile) -> str | None:
    """Why `target` may not run as `caller`'s return-mode child (the sub-code first), or None."""
    if not target.delegation.callable:
        return f"agent.target_not_callable: profile `{target.id}` is not callable by other Agents"
    if not target.delegation.allow_as_subagent:
        return f"agent.target_not_subagent: profile `{target.id}` does not allow return-mode subagent calls"
    if not caller_allowed(caller.id, target):
        return f"agent.target_caller_denied: profile `{caller.id}` is not allowed to call `{target.id}`"
    return None


def handoff_problem(caller: AgentProfile, target: AgentProfile) -> str | None:
    if not target.delegation.callable:
        return f"agent.target_not_callable: Agent `{target.id}` is not available for handoff"
    if not target.delegation.allow_as_handoff_target:
        return f"agent.target_not_handoff: Agent `{target.id}` is not available as a handoff target"
    if not caller_allowed(caller.id, target):
        return f"agent.target_caller_denied: you are not allowed to hand off to Agent `{target.id}`"
    return None
