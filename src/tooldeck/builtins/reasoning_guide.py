"""`reasoning_guide` (Agenvoy's tool of the same name): the full rule of a topic, fetched when the
situation matches it, so the rules stay out of the system prompt until they are needed.

`topic` (one) or `topics` (several, Agenvoy's newer form; answered in the order asked, each under a
`## <topic>` heading) → the guidance texts shipped in `builtins/guides/<topic>.md`, written for
tooldeck's own tools. An unknown topic: `unknown topic "<t>"; available: a, b, …` (`guide.unknown_topic`,
nothing else is answered); neither field: `guide.topic_required` with the same list. The schema
carries no `enum`, so the model gets this message (which lists the topics) rather than a schema error.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolOutput

TOPICS: Final = {
    "tool_error": "any tool call failed: read before retrying, before error_history, before repairing a script tool",
    "targeted_read": "a question about specific symbols, sections or keywords of a file: search, then read a window",
    "ask_user": "missing target, vague scope, unclear spec, ambiguous time, several fitting tools: resolve intent",
    "write_todo": "an analysis, research or other task of 3+ steps: decide the checklist before write_todo",
    "html_render": "producing a standalone HTML deliverable (report, dashboard, chart, map)",
    "rag_web": "a factual or time-sensitive question (people, organisations, prices, events): search and cite",
    "tool_generate": "the task needs live data or a repeatable operation no offered tool covers: build a script tool",
    "deferred_tools": "how to find tools by name and call them through run_tool in the deferred modes",
    "workspace_output": "where the reply and deliverables go in the workspace, and how to publish them",
}
MAX_TOPICS: Final = len(TOPICS)
UNKNOWN_TOPIC: Final = "guide.unknown_topic"
TOPIC_REQUIRED: Final = "guide.topic_required"


@cache
def guide(topic: str) -> str:
    """The shipped text of one topic (package data, read once)."""
    return resources.files("tooldeck.builtins").joinpath("guides", f"{topic}.md").read_text(encoding="utf-8").strip()


def _available() -> str:
    return ", ".join(TOPICS)


def reasoning_guide(args: dict[str, Any], _ctx: CallContext) -> ToolOutput:
    asked: list[str] = [t.strip() for t in args.get("topics") or ()]
    if args.get("topic") is not None:
        asked.insert(0, args["topic"].strip())
    if not asked:
        raise ToolCallError(TOPIC_REQUIRED, f"topic is required; available: {_available()}")
    topics = list(dict.fromkeys(asked))
    for topic in topics:
        if topic not in TOPICS:
            raise ToolCallError(UNKNOWN_TOPIC, f'unknown topic "{topic}"; available: {_available()}')
    if len(topics) == 1:
        return ToolOutput(guide(topics[0]), {"topics": topics})
    return ToolOutput("\n\n".join(f"## {t}\n\n{guide(t)}" for t in topics), {"topics": topics})


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("reasoning_guide"),
    title="Fetch a reasoning guide",
    description="The full rule for a situation; call it before acting when one matches:\n"
                + "\n".join(f"- {topic}: {when}" for topic, when in TOPICS.items()),
    input_schema={
        "type": "object",
        "properties": {
            "topic": {"type": "string", "description": "One topic: " + _available() + "."},
            "topics": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_TOPICS,
                       "description": "Several topics at once."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, idempotent=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, reasoning_guide)]
