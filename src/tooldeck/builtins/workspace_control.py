"""`workspace.commit` (publish a file as the run's reply) and `workspace.finish` (the completion tool).

Both only hand an effect to the host (`tooldeck.workspace.effects`): the runtime does not publish
anything itself.
"""

from __future__ import annotations

from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import (
    DEFAULT_POLICY,
    call_name,
    profile_aware,
    roots_sentence,
    workspace,
)
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.results import ToolEffect, ToolOutput
from tooldeck.workspace import effects
from tooldeck.workspace import errors as E
from tooldeck.workspace.reading import count_words

MAX_COMMIT_BYTES: Final = 1024 * 1024
FINISH_TOOL_ID = "builtin:workspace.finish"


# -- commit -------------------------------------------------------------------------------------------
def commit(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or "replace"
    if mode not in ("replace", "append"):
        raise ToolCallError(E.COMMIT_MODE_INVALID, f"mode must be `replace` or `append` (got `{mode}`).")
    store, policy = workspace(ctx)
    raw = args.get("path")
    loc = store.locate(policy, raw if isinstance(raw, str) and raw.strip() else policy.body_file)
    data = store.read(loc)
    if len(data.data) > MAX_COMMIT_BYTES:
        raise ToolCallError(E.COMMIT_TOO_LARGE, f"`{loc.shown}` has {len(data.data):,} bytes; a reply can be at most "
                            f"{MAX_COMMIT_BYTES:,}. Commit a shorter file.")
    reason = args.get("reason")
    reason = reason.strip() or None if isinstance(reason, str) else None
    chars = len(data.text)
    effect = ToolEffect(effects.COMMIT_REQUESTED, {"path": loc.shown, "mode": mode, "reason": reason,
                                                   "sha256": data.sha256, "chars": chars, "text": data.text})
    lines = [f"Requested chat commit of {loc.shown} with mode {mode.capitalize()}."]
    finish = call_name(ctx, FINISH_TOOL_ID)
    if finish:
        lines.append(f"Continue editing and commit again if needed; when the reply is final, call `{finish}`. "
                     "Do not use plain text as the final answer.")
    structured = {"path": loc.shown, "mode": mode, "reason": reason, "sha256": data.sha256, "chars": chars,
                  "words": count_words(data.text)}
    return ToolOutput("\n".join(lines), structured, resource_refs=[loc.shown], effects=[effect])


COMMIT = ToolDescriptor(
    id=ToolId.builtin("workspace.commit"),
    title="Commit the reply",
    description=f"Publish a workspace file as this run's reply (default `{DEFAULT_POLICY.body_file}`): `replace` "
    "makes the file the whole reply, `append` adds it to the end. Any visible file can be committed. Commit again "
    "after later edits; when the reply is final, call `workspace_finish`. " + roots_sentence(),
    input_schema={
        "type": "object",
        "properties": {
            "path": {"type": ["string", "null"], "description": f"File to publish (default "
                                                                 f"`{DEFAULT_POLICY.body_file}`)."},
            "mode": {"type": "string", "description": "`replace` (default) or `append`."},
            "reason": {"type": "string", "description": "Why this is being published now, in a few words."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(control=True, mutating=True),
)


# -- finish -------------------------------------------------------------------------------------------
def finish(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    link = ctx.run.state.get("agent.link")  # agent/delegation/link.py: a return-mode child ends with task_return
    if link is not None and link.parent_task is not None:
        raise ToolCallError("agent.child_finish_denied", f"`{ctx.call_name}` cannot end a delegated task; call "
                            "`task_return` with your result instead.")
    turn = ctx.turn
    failed = turn.failed_before(ctx.index)
    if failed:
        names = ", ".join(dict.fromkeys(f"`{turn.call_names[i]}`" for i in failed))
        raise ToolCallError(E.FINISH_AFTER_FAILED_CALL, f"{names} failed earlier in this turn; fix it, then finish.")
    after = len(turn.call_names) - 1 - ctx.index
    if after > 0:
        raise ToolCallError(E.TOOL_AFTER_FINISH, f"`{ctx.call_name}` must be the last call of the turn, but "
                            f"{after} call{'s' if after != 1 else ''} came after it. Make those calls first, then "
                            f"call `{ctx.call_name}` last.")
    reason = args.get("reason")
    reason = reason.strip() or None if isinstance(reason, str) else None
    return ToolOutput("Finished the Agent run.", {"finished": True, "reason": reason},
                      effects=[ToolEffect(effects.FINISH, {"reason": reason})])


FINISH = ToolDescriptor(
    id=ToolId.builtin("workspace.finish"),
    title="Finish the run",
    description="Finish the run once the reply is committed with `workspace_commit`. It must be the last call of "
    "your turn, and it is refused when an earlier call of the same turn failed: fix that first.",
    input_schema={
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "Why the run is complete, in a few words."}},
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(control=True),
)

TOOLS = profile_aware([
    BuiltinTool(COMMIT, commit, blocking=True),
    BuiltinTool(FINISH, finish),
])
