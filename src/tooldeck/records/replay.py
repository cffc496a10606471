"""Replay: a recorded invocation's tool history in a provider's wire format.

Per round: one assistant turn with its calls in the order the model sent them, then exactly one
result per call in that same order, whatever order they completed in. Rules:

- arguments are the recorded raw wire arguments decoded by `ToolArguments`; invalid ones replay as
  `{}` and their paired error result says why;
- a call without a result (interrupted) gets the interrupted-call error: it may or may not have
  run and will not be retried (or, if it never reached dispatch, that nothing ran);
- call names are the snapshot's names (or, with `snapshot=`, the names the given snapshot binds
  to the same tool ids), made valid and unique for the target provider; names the model invented
  are sanitised the same way;
- call ids are kept where the provider accepts them, else rewritten deterministically
  (`protocols.ids`), the same on the call and its result;
- images a result showed the model (`read_files` of a PNG) come back from their workspace copies,
  which the records name by the result's `image:<mime>:<path>` resource refs (never the bytes):
  given `workspace=` (the run's workspace folder), each format gets them in the shape the live loop
  sent; without it, or for a copy no longer there, the result's text (which names the copy) alone;
- a turn's provider items (reasoning items, thinking blocks, text parts) and each call's provider
  data (Gemini `thoughtSignature`, a Responses item id) come back verbatim where the target format
  is of the family the invocation was made for (`protocols/items.py`): before the calls, in the
  order the model sent them. On a replay to another family they are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tooldeck.core.arguments import MISSING, ToolArguments
from tooldeck.core.results import MODEL_IMAGE_MAX_BYTES, ToolImage, parse_image_ref
from tooldeck.naming import allocate_one
from tooldeck.protocols import NAME_PROTOCOL, format_name, render
from tooldeck.protocols.common import ReplayCall, ReplayTurn
from tooldeck.protocols.ids import IdMap
from tooldeck.records.interrupted import interrupted_outcome
from tooldeck.records.reader import CallRecord, InvocationHistory, RecordReader
from tooldeck.snapshot.snapshot import Snapshot


class _Names:
    """Recorded call name → the name the target provider gets (stable, valid, unique)."""

    def __init__(self, recorded: Snapshot | None, current: Snapshot | None, protocol: str) -> None:
        self.protocol = protocol
        self._used: set[str] = set()
        self._final: dict[str, str] = {}
        current_names = {b.tool_id: b.call_name for b in current.bindings} if current is not None else {}
        self._base: dict[str, str] = {}
        for b in recorded.bindings if recorded is not None else ():
            self._base[b.call_name] = current_names.get(b.tool_id, b.call_name)
        for name in self._base.values():
            self._allocate(name)

    def _allocate(self, name: str) -> str:
        final = self._final.get(name)
        if final is None:
            final = self._final[name] = allocate_one(name, self._used, self.protocol)
        return final

    def __call__(self, call_name: str) -> str:
        return self._allocate(self._base.get(call_name, call_name))


def _images(refs: list[str], workspace: Path | None) -> tuple[ToolImage, ...]:
    """The images the result's refs name, read from the workspace copies (a missing one is left out)."""
    if workspace is None or not refs:
        return ()
    out = []
    for ref in refs:
        parsed = parse_image_ref(ref)
        if parsed is None:
            continue
        mime, rel = parsed
        path = (workspace / rel).resolve()
        if not path.is_relative_to(workspace.resolve()):  # a ref is data: never read outside the workspace
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if 0 < len(data) <= MODEL_IMAGE_MAX_BYTES:
            out.append(ToolImage(rel, mime, data))
    return tuple(out)


def replay_call(call: CallRecord, call_id: str, name: str, workspace: Path | None = None) -> ReplayCall:
    arguments = ToolArguments.decode(MISSING if call.raw_arguments is None else call.raw_arguments)
    if call.result is not None:
        return ReplayCall(call_id, name, arguments.to_replay_object(), call.result.content, call.result.is_error,
                          call.provider_data, _images(call.result.resource_refs, workspace))
    _status, _code, text, _structured = interrupted_outcome(call.call_name, call.status, call.raw_arguments)
    return ReplayCall(call_id, name, arguments.to_replay_object(), text, True, call.provider_data)


def replay_turns(history: InvocationHistory, provider: str, recorded: Snapshot | None = None,
                 snapshot: Snapshot | None = None, workspace: str | Path | None = None) -> list[ReplayTurn]:
    """The provider-neutral turns of `history` with ids and names final for `provider` (images from the copies
    in `workspace`, the run's workspace folder, when given)."""
    root = Path(workspace) if workspace is not None else None
    fmt = format_name(provider)
    names = _Names(recorded, snapshot, NAME_PROTOCOL[fmt])
    ids = IdMap(fmt)
    source = history.summary.provider
    turns: list[ReplayTurn] = []
    for _round, calls in history.rounds():
        replayed = []
        for call in calls:
            name = names(call.call_name)
            replayed.append(replay_call(call, ids.assign(call.call_id, name), name, root))
        turns.append(ReplayTurn(tuple(replayed), tuple(history.turn_items(calls)), source))
    return turns


def replay_history(history: InvocationHistory, provider: str, recorded: Snapshot | None = None,
                   snapshot: Snapshot | None = None, workspace: str | Path | None = None) -> list[dict[str, Any]]:
    return render(replay_turns(history, provider, recorded, snapshot, workspace), provider)


def replay(store: RecordReader, invocation_id: str, provider: str, *,
           snapshot: Snapshot | None = None, workspace: str | Path | None = None) -> list[dict[str, Any]]:
    """The recorded tool history of `invocation_id` as `provider` messages (OpenAI Chat messages,
    Responses input items, Anthropic messages or Gemini contents). `workspace`: the run's workspace
    folder, where the images the model got are kept (`Runtime.run_state(run_id).workspace_root`)."""
    history = store.history(invocation_id)
    recorded = Snapshot.from_json(store.snapshot_json(history.summary.snapshot_id))
    return replay_history(history, provider, recorded, snapshot, workspace)


def replay_all(store: RecordReader, invocation_id: str, *, snapshot: Snapshot | None = None,
               workspace: str | Path | None = None) -> Mapping[str, list[dict[str, Any]]]:
    """The same history in every format (one read of the store)."""
    from tooldeck.protocols import FORMATS

    history = store.history(invocation_id)
    recorded = Snapshot.from_json(store.snapshot_json(history.summary.snapshot_id))
    turns = {fmt: replay_turns(history, fmt, recorded, snapshot, workspace) for fmt in FORMATS}
    return {fmt: render(t, fmt) for fmt, t in turns.items()}
