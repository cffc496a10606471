"""What a run tells its host: `AgentEvent`s as it goes (the live view, `tooldeck run --json`) and
an `AgentResult` at the end.

Events, in order (each a `kind` and a JSON-able `data` dict):

- `run_started` {run_id, model, task}
- `turn_started` {turn}
- `text` / `reasoning` {turn, text}: a streamed delta of the model's answer
- `tool_call_started` {turn, index, call_id, name} and `tool_call_arguments` {turn, index, text}: a
  call as it streams
- `model_turn` {turn, invocation_id, text, calls: [{id, name}], stop_reason, usage}: the whole answer
- `tool_call` {turn, call_id, name, arguments}: a call about to run (arguments as sent)
- `tool_result` {turn, call_id, tool_id, is_error, error_code, content}
- `commit` {turn, call_id, path, mode, chars}: a `workspace_commit` handed to the host
- `todo` {turn, call_id, todos: [{content, status, active_form?}], done, in_progress, pending}: the checklist
  `write_todo` saved (the whole list, as it now stands), after the turn that saved it
- `background_reports` {turn, count, text}: reports added to the next model turn
- `run_finished` {status, completed_by, text, reply, usage, turns, error_code, error}

Delegation and subagents add (agent/delegation/, docs/agent.md): `task_started`, `task_finished`,
`child_event` (a delegated child's events), `handoff`, `subagent_waiting`, `subagent_event`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tooldeck.agent.types import Usage
from tooldeck.core.errors import TooldeckError
from tooldeck.workspace.effects import CommitRequest

Status = Literal["completed", "max_turns", "max_tokens", "max_output_tokens", "content_filter", "cancelled",
                 "failed"]
"""`completed`: the model answered without tool calls, or a completion tool succeeded. `max_turns` /
`max_tokens`: the run's turn or token budget ran out. `max_output_tokens`: the model's last answer was
cut at its output limit. `content_filter`: the provider withheld the answer. `cancelled`: the host
cancelled the run. `failed`: a model request failed (`error_code` says why)."""


@dataclass(frozen=True, slots=True)
class AgentEvent:
    kind: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.kind, **self.data}


OnAgentEvent = Callable[[AgentEvent], None]
OnCommit = Callable[[CommitRequest], Any]
"""The host callback for `workspace_commit`: called with each commit as the turn that made it ends
(before the next model turn); a coroutine it returns is awaited."""


@dataclass(slots=True)
class AgentResult:
    status: Status
    run_id: str
    text: str = ""
    """The model's last text (its answer when it ended without tool calls)."""
    reply: str | None = None
    """The reply published with `workspace_commit` (replace / append applied in order), if any."""
    completed_by: str | None = None
    """`answer`, or the call name of the completion tool that ended the run."""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    invocation_ids: list[str] = field(default_factory=list)
    commits: list[CommitRequest] = field(default_factory=list)
    error: TooldeckError | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    @property
    def output(self) -> str:
        """The run's answer: the committed reply, else the last text."""
        return self.reply if self.reply is not None else self.text

    @property
    def error_code(self) -> str | None:
        return self.error.code if self.error is not None else None

    def summary(self) -> dict[str, Any]:
        return {"status": self.status, "run_id": self.run_id, "completed_by": self.completed_by, "text": self.text,
                "reply": self.reply, "usage": self.usage.to_dict(), "turns": self.turns,
                "invocation_ids": list(self.invocation_ids), "error_code": self.error_code,
                "error": self.error.message if self.error is not None else None}
