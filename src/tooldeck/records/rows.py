"""Row mapping of the records store: the columns the read side selects and the read-side records
(`records/reader.py`) built from them. No I/O here: `queries.py` and `recovery.py` run the SQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tooldeck.records import owner as owners
from tooldeck.records import statements as sql
from tooldeck.records import turns
from tooldeck.records.reader import CallRecord, InvocationSummary, ResultRecord

TURN_COLUMNS = ("t.turn_id, t.invocation_id, t.round, t.requested_at, t.calls, o.host, o.pid, o.token "
                "FROM turns t LEFT JOIN owners o ON o.owner_id = t.owner_id")
"""A turn's row as `calls` maps it (select it with `SELECT {TURN_COLUMNS} WHERE …` on `turns t`)."""

SUMMARY_COLUMNS = (
    "i.invocation_id, i.run_id, i.provider, i.scene, i.headless, i.snapshot_id, i.created_at, "
    "(SELECT count(*) FROM turns t WHERE t.invocation_id = i.invocation_id), "
    "(SELECT total(t.n) FROM turns t WHERE t.invocation_id = i.invocation_id), "
    f"(SELECT total(r.errors) FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
    "WHERE t.invocation_id = i.invocation_id), "
    f"(SELECT total(r.n) FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
    "WHERE t.invocation_id = i.invocation_id), "
    f"(SELECT total(r.unknown) FROM turns t JOIN results r ON {sql.RESULTS_OF_TURN} "
    "WHERE t.invocation_id = i.invocation_id)")
"""An invocation's row with its counts, as `summary` maps it (on `invocations i`)."""

Batches = dict[int, list[tuple[float, str]]]
"""turn_id → its result batches (recorded_at, results JSON) in batch order."""


def summary(r: tuple[Any, ...]) -> InvocationSummary:
    calls = int(r[8])
    return InvocationSummary(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7], calls, int(r[9]),
                             calls - int(r[10]), int(r[11]))


def calls(row: tuple[Any, ...], batches: Sequence[tuple[float, str]]) -> list[CallRecord]:
    """The calls of one `turns` row (`TURN_COLUMNS`) with their results, in index order."""
    _turn_id, invocation_id, round_no, requested_at, data, host, pid, token = row
    owner = owners.Owner(host, pid, token) if host is not None else None
    text = turns.text
    outcomes: dict[int, tuple[list[Any], float]] = {}
    for recorded_at, results in batches:
        for r in turns.decode(results):
            outcomes.setdefault(r[0], (r, recorded_at))
    entries = turns.decode(data)
    entries.sort(key=_index)
    out = []
    for e in entries:
        if len(e) >= turns.STARTED_LEN:
            tool_id, arguments, started_at, status = text(e[4]), e[5], e[6], "started"
        else:
            tool_id = arguments = started_at = None
            status = "requested"
        finished_at = result = None
        got = outcomes.get(e[0])
        if got is not None:
            r, recorded_at = got
            status, finished_at = r[1], r[4]
            if r[2] is not None:
                tool_id = text(r[2])
            if r[3] is not None:  # when the tool really started (the turn's time is its admission)
                started_at = r[3]
            if r[5] is not None:
                result = ResultRecord(text(r[5]), r[6], bool(r[7]), text(r[8]), r[9] or [], r[10], r[11] or [],
                                      recorded_at)
        record = CallRecord(invocation_id, round_no, e[0], text(e[1]), text(e[2]), tool_id, text(e[3]), arguments,
                            status, requested_at, started_at, finished_at, owner, result)
        extra = turns.provider(e)
        if type(extra) is dict:
            record.provider_data = extra.get("data")
            record.provider_items = extra.get("items")
        out.append(record)
    return out


def _index(entry: list[Any]) -> int:
    return entry[0]
