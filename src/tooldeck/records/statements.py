"""The hot-path SQL of the records store, one statement per batch (multi-row VALUES and CASE updates).

Python's sqlite3 pays a few µs per executed statement; a model turn's calls are therefore written
with one statement per table and transaction instead of one per call. Batches larger than CHUNK
are written in several statements inside the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import TypeVar

CHUNK = 64
T = TypeVar("T")


def chunks(items: Sequence[T]) -> Iterator[Sequence[T]]:
    if len(items) <= CHUNK:
        yield items
        return
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]


def _case(n: int) -> str:
    return "CASE idx " + " ".join(["WHEN ? THEN ?"] * n) + " END"


def _in(n: int) -> str:
    return "(" + ", ".join(["?"] * n) + ")"


@cache
def insert_calls(n: int) -> str:
    """Params per row: invocation_id, round, idx, call_id, call_name, raw_arguments, status, tool_id,
    arguments, requested_at, started_at, owner_id."""
    rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * n)
    return ("INSERT INTO calls (invocation_id, round, idx, call_id, call_name, raw_arguments, status, tool_id, "
            f"arguments, requested_at, started_at, owner_id) VALUES {rows}")


@cache
def start_calls(n: int) -> str:
    """Params: started_at, (idx, tool_id) × n, (idx, arguments) × n, invocation_id, round, idx × n."""
    return (f"UPDATE calls SET status = 'started', started_at = ?, tool_id = {_case(n)}, arguments = {_case(n)} "
            f"WHERE invocation_id = ? AND round = ? AND idx IN {_in(n)} AND status = 'requested'")


@cache
def finish_calls(n: int) -> str:
    """Params: (idx, status) × n, (idx, tool_id) × n, (idx, started_at) × n, (idx, finished_at) × n,
    invocation_id, round, idx × n."""
    return (f"UPDATE calls SET status = {_case(n)}, tool_id = coalesce({_case(n)}, tool_id), "
            f"started_at = coalesce(started_at, {_case(n)}), finished_at = {_case(n)} "
            f"WHERE invocation_id = ? AND round = ? AND idx IN {_in(n)} AND status IN ('requested', 'started')")


RESULT_COLUMNS = ("invocation_id, round, idx, content, structured, is_error, error_code, resource_refs, raw_result, "
                  "effects, recorded_at")


@cache
def insert_results(n: int) -> str:
    rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * n)
    return f"INSERT INTO results ({RESULT_COLUMNS}) VALUES {rows} ON CONFLICT DO NOTHING"
