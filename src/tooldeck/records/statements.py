"""The SQL of the records store's turns and results (schema v3; the entries are in records/turns.py).

The hot path writes one row per transaction: `calls_admitted` one `turns` row (and, when the gate
refused calls, their results as the turn's batch 0), `calls_finished` one `results` row per batch. A
turn's result batches are the rowid range `turn_id << RESULT_BATCH_BITS` .. `+ BATCH_MASK`, so
`results` keeps no index, and each batch number of a turn can be inserted only once.
"""

from __future__ import annotations

from tooldeck.records.schema import RESULT_BATCH_BITS

BATCH_MASK = (1 << RESULT_BATCH_BITS) - 1
_FIRST = f"t.turn_id << {RESULT_BATCH_BITS}"
RESULTS_OF_TURN = f"r.result_id BETWEEN {_FIRST} AND ({_FIRST}) + {BATCH_MASK}"
"""Join condition: the result batches `r` of the turn `t`."""

INSERT_TURN = ("INSERT INTO turns (invocation_id, round, owner_id, requested_at, n, dense, calls) "
               "VALUES (?, ?, ?, ?, ?, ?, ?)")

INSERT_FIRST_RESULTS = (
    f"INSERT INTO results (result_id, n, errors, unknown, recorded_at, results) SELECT {_FIRST}, ?, ?, ?, ?, ? "
    "FROM turns t WHERE t.invocation_id = ? AND t.round = ? AND t.dense AND t.n > ? ON CONFLICT DO NOTHING")
"""The common case in one statement: the turn's first batch, whose indexes are all in 0 .. n-1 of a
dense turn. Params: n, errors, unknown, recorded_at, results, invocation_id, round, max index. No
row inserted means anything else (no such turn, results already there, a sparse turn): the caller
then checks call by call."""

INSERT_RESULTS = "INSERT INTO results (result_id, n, errors, unknown, recorded_at, results) VALUES (?, ?, ?, ?, ?, ?)"

TURN = "SELECT turn_id, calls FROM turns WHERE invocation_id = ? AND round = ?"

BATCHES = "SELECT result_id, recorded_at, results FROM results WHERE result_id BETWEEN ? AND ? ORDER BY result_id"

OPEN_TURN = f"t.n > (SELECT total(r.n) FROM results r WHERE {RESULTS_OF_TURN})"
"""Condition on a turn `t`: some of its calls have no result yet."""

INSERT_NEXT_RESULTS = ("INSERT INTO results (result_id, n, errors, unknown, recorded_at, results) "
                       "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING")
"""A later batch of a turn this process admitted, at the rowid it expects: no row inserted means
another writer put a batch there first (recovery), and the caller checks call by call."""
