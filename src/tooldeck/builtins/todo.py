"""`write_todo` (Agenvoy's tool of the same name): the live checklist of a multi-step task.

Each call sends the whole ordered list and replaces the previous one (nothing is merged). Items are
`{content, status, active_form?}`; status is `pending` (also when empty), `in_progress` or
`completed`; at most one item may be `in_progress`. The messages are Agenvoy's:

- `todos must contain at least one item`                                      (`todo.empty_list`)
- `todo #i has empty content`                                                 (`todo.empty_content`)
- `todo #i has invalid status "x" (want pending / in_progress / completed)`   (`todo.invalid_status`)
- `only one todo may be in_progress at a time, got N`                         (`todo.too_many_in_progress`)
- success: `checklist saved: N step(s) — d done, p in progress, q pending`

The schema has no `enum` / `minItems` for these fields, so the model gets these messages rather than
a generic schema error. The list is kept per run (`current(run)`), returned as the result's structured
value (so the records keep every version) and handed to the host as a `todo_updated` effect, which the
agent loop turns into a `todo` event (docs/agent.md).
"""

from __future__ import annotations

from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.runs import RunState
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput

STATUSES: Final = ("pending", "in_progress", "completed")
TODO_UPDATED: Final = "todo_updated"
"""Effect kind of a saved checklist: `{todos, done, in_progress, pending}`."""
STATE_KEY: Final = "todo"
MAX_ITEMS: Final = 100
MAX_TEXT: Final = 500

EMPTY_LIST: Final = "todo.empty_list"
EMPTY_CONTENT: Final = "todo.empty_content"
INVALID_STATUS: Final = "todo.invalid_status"
TOO_MANY_IN_PROGRESS: Final = "todo.too_many_in_progress"


def parse(items: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The checked list (content and active_form trimmed, empty status → pending), or the ToolCallError."""
    if not items:
        raise ToolCallError(EMPTY_LIST, "todos must contain at least one item")
    todos: list[dict[str, str]] = []
    doing = 0
    for i, item in enumerate(items, 1):
        content = item["content"].strip()
        if not content:
            raise ToolCallError(EMPTY_CONTENT, f"todo #{i} has empty content")
        raw_status = item.get("status", "")
        status = raw_status.strip() or "pending"
        if status not in STATUSES:
            raise ToolCallError(INVALID_STATUS, f'todo #{i} has invalid status "{raw_status}" '
                                "(want pending / in_progress / completed)")
        doing += status == "in_progress"
        todo = {"content": content, "status": status}
        active = (item.get("active_form") or "").strip()
        if active:
            todo["active_form"] = active
        todos.append(todo)
    if doing > 1:
        raise ToolCallError(TOO_MANY_IN_PROGRESS, f"only one todo may be in_progress at a time, got {doing}")
    return todos


def counts(todos: list[dict[str, str]]) -> dict[str, int]:
    return {"done": sum(t["status"] == "completed" for t in todos),
            "in_progress": sum(t["status"] == "in_progress" for t in todos),
            "pending": sum(t["status"] == "pending" for t in todos)}


def current(run: RunState) -> list[dict[str, str]]:
    """The run's checklist as last saved (empty before the first `write_todo`)."""
    return [dict(t) for t in run.state.get(STATE_KEY, ())]


def write_todo(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    todos = parse(args["todos"])
    n = counts(todos)
    ctx.run.state[STATE_KEY] = todos
    data = {"todos": todos, **n}
    text = (f"checklist saved: {len(todos)} step(s) — {n['done']} done, {n['in_progress']} in progress, "
            f"{n['pending']} pending")
    return ToolOutput(text, data, effects=[ToolEffect(TODO_UPDATED, data)])


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("write_todo"),
    title="Keep the task checklist",
    description="Keep a live checklist of a multi-step task (3+ steps) that the user watches. Send the ENTIRE "
                "ordered list every call: it replaces the previous one. Exactly one step `in_progress` while "
                "working; when a step is done, mark it `completed` and the next one `in_progress` in the same "
                "call. While executing, keep the steps fixed (change only `status`); start a fresh list for a "
                "new objective once every step is completed. Skip single-step tasks. It records progress "
                "only; it runs nothing.",
    input_schema={
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "maxItems": MAX_ITEMS,
                "description": "The complete ordered checklist, replacing any earlier list.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "maxLength": MAX_TEXT,
                                    "description": "Imperative step title, e.g. `Add the language toggle`."},
                        "status": {"type": "string",
                                   "description": "pending (not started) | in_progress (working now; one at "
                                                  "most) | completed."},
                        "active_form": {"type": "string", "maxLength": MAX_TEXT,
                                        "description": "Label shown while the step runs, e.g. `Adding the "
                                                       "language toggle`. Optional."},
                    },
                    "required": ["content", "status"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["todos"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(idempotent=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, write_todo)]
