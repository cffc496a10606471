"""Records: per-call overhead of recording (records on vs off, same run): a turn of 10 calls of a
trivial async extension tool, and the one-call turn (the common case); the cost of writing results
while a turn runs (turns whose calls suspend: all finishing together, and finishing 6 ms apart so
that results are written in several batches, and how long after a call finished its result was
committed); the store alone; and replay of a 1,000-call history
into each provider format.

    python -m bench.records_bench
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import tooldeck
from bench.timing import REPEATS_ALLOWED, expect_ok, report
from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.protocols import FORMATS
from tooldeck.records.replay import replay, replay_history
from tooldeck.records.store import SqliteRecorder
from tooldeck.records.writer import FLUSH_BOUND_S
from tooldeck.snapshot.snapshot import Snapshot

ARGS = '{"a": 1, "b": 2}'
TURN = 10
HISTORY_ROUNDS = 100

PROFILE = {"allow": ["extension/*"], "max_identical_calls": REPEATS_ALLOWED}


async def add(a: int, b: int) -> int:
    return a + b


def _runtime(home: Path, records: bool) -> tooldeck.Runtime:
    rt = tooldeck.Runtime(home, builtins=[], records=records, profile=PROFILE)
    rt.tool(extension_id="bench", annotations=ToolAnnotations(concurrency_safe=True))(add)
    return rt


async def per_call(home: Path) -> None:
    off, on = _runtime(home / "off", False), _runtime(home / "on", True)
    inv_off, inv_on = off.invocation(), on.invocation()
    turn = [{"id": f"call_{i}", "name": "add", "arguments": ARGS} for i in range(TURN)]
    one = turn[:1]
    assert [r.content for r in await inv_on.arun(turn)] == ["3"] * TURN

    def variant(inv: object, calls: list[dict[str, str]]) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            inv.gate.budget.total = 0  # type: ignore[attr-defined]
            return await inv.arun(calls)  # type: ignore[attr-defined]
        return run

    rows, cpu = await _interleaved({"records off": variant(inv_off, turn), "records on": variant(inv_on, turn)},
                                   inner=20, repeats=31, per=TURN)
    _print(f"Per call in a turn of {TURN} (median over 31 interleaved batches of 20 turns):", rows, cpu)
    ten = (dict(rows), dict(cpu))
    rows, cpu = await _interleaved({"records off": variant(inv_off, one), "records on": variant(inv_on, one)},
                                   inner=100, repeats=31, per=1)
    _print("The one-call turn (median over 31 interleaved batches of 100 turns):", rows, cpu)
    off.close()
    on.close()
    print("Per turn (issue 13: the one-call turn with records on, target ≤ 30 µs), wall / CPU µs:")
    for label, (wall, cpu_v), per in (("turn of 1", (dict(rows), dict(cpu)), 1), (f"turn of {TURN}", ten, TURN)):
        print(f"  {label:<11} records off {wall['records off'] * per:8.2f} / {cpu_v['records off'] * per:8.2f}   "
              f"records on {wall['records on'] * per:8.2f} / {cpu_v['records on'] * per:8.2f}   "
              f"{wall['records on'] / wall['records off']:6.2f}× / {cpu_v['records on'] / cpu_v['records off']:6.2f}× "
              "records off")


def _print(title: str, rows: list[tuple[str, float]], cpu: list[tuple[str, float]], unit: str = "call") -> None:
    print(title)
    print("  wall time:")
    report(rows, "records off")
    print("  CPU time of the process (all threads; less sensitive to other jobs on the machine):")
    report(cpu, "records off")
    wall, cpu_v = dict(rows), dict(cpu)
    print(f"  recording adds {wall['records on'] - wall['records off']:.2f} µs wall, "
          f"{cpu_v['records on'] - cpu_v['records off']:.2f} µs CPU per {unit}")


async def waiting_turns(home: Path) -> None:
    """Turns whose calls suspend, so results can be written while the turn runs: (a) every call
    suspends once and they finish together; (b) call i sleeps 6·i ms, so the results arrive over
    54 ms and are written in several batches. CPU time of the process per turn (wall time is the
    sleeps)."""
    off, on = _runtime(home / "w-off", False), _runtime(home / "w-on", True)
    for rt in (off, on):
        @rt.tool(extension_id="bench", annotations=ToolAnnotations(concurrency_safe=True))
        async def suspend(a: int) -> int:
            await asyncio.sleep(0)
            return a

        @rt.tool(extension_id="bench", annotations=ToolAnnotations(concurrency_safe=True))
        async def stagger(ms: int) -> int:
            await asyncio.sleep(ms / 1000)
            return ms

    inv_off, inv_on, inv_on_apart = off.invocation(), on.invocation(), on.invocation()
    together = [{"id": f"call_{i}", "name": "suspend", "arguments": f'{{"a": {i}}}'} for i in range(TURN)]
    apart = [{"id": f"call_{i}", "name": "stagger", "arguments": f'{{"ms": {6 * i}}}'} for i in range(TURN)]

    def variant(inv: object, calls: list[dict[str, str]]) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            inv.gate.budget.total = 0  # type: ignore[attr-defined]
            return await inv.arun(calls)  # type: ignore[attr-defined]
        return run

    rows, cpu = await _interleaved({"records off": variant(inv_off, together), "records on": variant(inv_on, together)},
                                   inner=20, repeats=21, per=1)
    _print(f"A turn of {TURN} calls that each suspend once and finish together, per turn (21 batches of 20):",
           rows, cpu, "turn")
    rows, cpu = await _interleaved({"records off": variant(inv_off, apart), "records on": variant(inv_on_apart, apart)},
                                   inner=4, repeats=15, per=1)
    _print(f"A turn of {TURN} calls finishing 6 ms apart over 54 ms, per turn (15 batches of 4):", rows, cpu, "turn")
    off.close()
    on.close()
    with contextlib.closing(sqlite3.connect(home / "w-on" / "records.sqlite")) as db:
        for name, inv in (("together", inv_on.id), ("6 ms apart", inv_on_apart.id)):
            turns, batches = db.execute(
                "SELECT count(DISTINCT t.turn_id), count(*) FROM turns t JOIN results r "
                "ON r.result_id BETWEEN t.turn_id << 20 AND (t.turn_id << 20) + 1048575 WHERE t.invocation_id = ?",
                (inv,)).fetchone()
            print(f"  {name}: {batches / turns:.2f} result batches (write transactions after the admission) per turn")
    flush_latency(home / "w-on" / "records.sqlite", inv_on_apart.id)


def flush_latency(path: Path, invocation_id: str) -> None:
    """How long after a call finished its result was committed, in the turns whose results arrive apart
    (the promise: within FLUSH_BOUND_S while the turn waits; tests check the order of events, not this)."""
    store = SqliteRecorder(path, recover_dead=False)
    try:
        calls = store.history(invocation_id).calls
    finally:
        store.close()
    lags = sorted((c.result.recorded_at - c.finished_at) * 1000 for c in calls
                  if c.result is not None and c.finished_at is not None)
    within = sum(lag <= FLUSH_BOUND_S * 1000 for lag in lags)
    print(f"  6 ms apart: result committed after the call finished: median {statistics.median(lags):.1f} ms, "
          f"p95 {lags[int(len(lags) * 0.95)]:.1f} ms, max {lags[-1]:.1f} ms; {within}/{len(lags)} within the "
          f"{FLUSH_BOUND_S * 1000:g} ms bound (FLUSH_BOUND_S)")


async def _interleaved(variants: dict[str, Callable[[], Awaitable[object]]], inner: int, repeats: int, per: int
                       ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Median µs per iteration / `per` of each variant, wall and CPU, measured round-robin."""
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, fn in variants.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(inner):
                out = await fn()
            wall[name].append((time.perf_counter() - w0) / inner / per * 1e6)
            cpu[name].append((time.process_time() - c0) / inner / per * 1e6)
            expect_ok(out)  # the last turn of the batch ran (a refusal or a spent budget would be sticky)
    return ([(n, statistics.median(v)) for n, v in wall.items()], [(n, statistics.median(v)) for n, v in cpu.items()])


def port_only(home: Path) -> None:
    """The store alone: the two port calls of a turn of 10 (admitted, finished), records built in advance."""
    from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
    from tooldeck.records.store import SqliteRecorder

    store = SqliteRecorder(home / "port" / "records.sqlite")
    inv = "inv_port_only"
    store.invocation_started(InvocationInfo("run_port", inv, "openai", "chat", False, "snap_port", "{}", time.time()))
    turns = 3_000
    req = [RequestedCall(f"call_{i}", "add", ARGS, i) for i in range(TURN)]
    started = [StartedCall(f"call_{i}", i, "extension/bench:add", {"a": 1, "b": 2}) for i in range(TURN)]
    finished = [FinishedCall(f"call_{i}", i, "extension/bench:add", "completed", {"a": 1, "b": 2}, "3", 3, False,
                             None, [], 3, 1.0, 2.0) for i in range(TURN)]
    samples_wall, samples_cpu = [], []
    for chunk in range(turns // 100):
        w0, c0 = time.perf_counter(), time.process_time()
        for r in range(chunk * 100 + 1, chunk * 100 + 101):
            store.calls_admitted(inv, r, req, started, 1.0)
            store.calls_finished(inv, r, finished)
        samples_wall.append((time.perf_counter() - w0) / 100 / TURN * 1e6)
        samples_cpu.append((time.process_time() - c0) / 100 / TURN * 1e6)
    store.close()
    print(f"The store alone (2 transactions per turn of {TURN}, {turns:,} turns): "
          f"{statistics.median(samples_wall):.2f} µs wall, {statistics.median(samples_cpu):.2f} µs CPU per call")


def sqlite_floor(home: Path) -> None:
    """What SQLite alone costs for the rows of a one-call turn (same file settings as the store, the
    statements of records/statements.py, values bound in advance): the admission and the result as two
    write transactions (the durability promise without the journal: the admission committed before the
    tool runs, the result before `arun` returns), as one, and two empty ones; against the store's port
    calls for the same turn, with the journal (two `os.write`s, then group commits; its commits run in
    the process too, so its CPU time counts them) and without. Interleaved, median over 31 batches of
    200 turns."""
    from tooldeck.records import statements as sql
    from tooldeck.records.port import FinishedCall, InvocationInfo, RequestedCall, StartedCall
    from tooldeck.records.store import SqliteRecorder

    stores = {name: SqliteRecorder(home / "floor" / name / "records.sqlite", journal=name != "direct")
              for name in ("port", "direct", "2", "1", "0")}
    for store in stores.values():
        store.invocation_started(InvocationInfo("run_f", "inv_f", "openai", "chat", False, "snap_f", "{}", 1.0))
        store.calls_admitted("inv_f", 1, [RequestedCall("call_0", "add", ARGS, 0)], [], 1.0)  # owned from now on
    calls = '[[0,"call_0","add","{\\"a\\": 1, \\"b\\": 2}","extension/bench:add",{"a":1,"b":2},1.0]]'
    result = '[[0,"completed","extension/bench:add",1.0,2.0,"3",3,false,null,null,3,null]]'
    req = [RequestedCall("call_0", "add", ARGS, 0)]
    started = [StartedCall("call_0", 0, "extension/bench:add", {"a": 1, "b": 2})]
    finished = [FinishedCall("call_0", 0, "extension/bench:add", "completed", {"a": 1, "b": 2}, "3", 3, False, None,
                             [], 3, 1.0, 2.0)]
    rounds = dict.fromkeys(stores, 1)
    conns = {name: sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
             for name, store in stores.items() if name not in ("port", "direct")}
    for conn in conns.values():
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON", "busy_timeout = 30000"):
            conn.execute(f"PRAGMA {pragma}")

    def port(name: str) -> Callable[[], None]:
        store = stores[name]

        def run() -> None:
            rounds[name] += 1
            store.calls_admitted("inv_f", rounds[name], req, started, 1.0)
            store.calls_finished("inv_f", rounds[name], finished)
        return run

    def raw(name: str, together: bool) -> Callable[[], None]:
        conn = conns[name]
        owner = conn.execute("SELECT owner_id FROM owners").fetchone()[0]

        def run() -> None:
            rounds[name] += 1
            conn.execute("BEGIN IMMEDIATE")
            turn_id = conn.execute(sql.INSERT_TURN, ("inv_f", rounds[name], owner, 1.0, 1, 1, calls)).lastrowid
            if not together:
                conn.execute("COMMIT")
                conn.execute("BEGIN IMMEDIATE")
            conn.execute(sql.INSERT_NEXT_RESULTS, (turn_id << 20, 1, 0, 0, 1.0, result))
            conn.execute("COMMIT")
        return run

    def empty() -> None:
        conns["0"].execute("BEGIN IMMEDIATE")
        conns["0"].execute("COMMIT")
        conns["0"].execute("BEGIN IMMEDIATE")
        conns["0"].execute("COMMIT")

    variants = {"the store's two port calls": port("port"),
                "the same, journal=False (each a transaction)": port("direct"),
                "SQLite: two transactions": raw("2", False),
                "SQLite: one transaction": raw("1", True), "SQLite: two empty transactions": empty}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(31):
        for name, fn in variants.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(200):
                fn()
            wall[name].append((time.perf_counter() - w0) / 200 * 1e6)
            cpu[name].append((time.process_time() - c0) / 200 * 1e6)
    print("Where a one-call turn's records go: the same rows through the store and through bare SQLite, per turn "
          "(31 interleaved batches of 200):")
    base = "the store's two port calls"
    print("  wall time:")
    report([(n, statistics.median(v)) for n, v in wall.items()], base)
    print("  CPU time of the process:")
    report([(n, statistics.median(v)) for n, v in cpu.items()], base)
    for conn in conns.values():
        conn.close()
    for store in stores.values():
        store.close()


def _history(home: Path) -> tuple[tooldeck.Runtime, str]:
    rt = _runtime(home / "history", True)
    inv = rt.invocation()
    for r in range(HISTORY_ROUNDS):
        inv.gate.budget.total = 0
        inv.run([{"id": f"call_{r}_{i}", "name": "add" if i != 7 else "nope",
                  "arguments": ARGS if i % 4 else ("[1,2]" if i == 4 else {"a": r, "b": i})} for i in range(TURN)])
    return rt, inv.id


def replay_speed(home: Path) -> None:
    rt, inv_id = _history(home)
    store = rt.recorder
    history = store.history(inv_id)  # type: ignore[attr-defined]
    assert len(history.calls) == HISTORY_ROUNDS * TURN
    recorded = Snapshot.from_json(store.snapshot_json(history.summary.snapshot_id))  # type: ignore[attr-defined]

    def median_ms(fn: object, repeats: int = 9) -> float:
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()  # type: ignore[operator]
            samples.append((time.perf_counter() - start) * 1e3)
        return statistics.median(samples)

    read = median_ms(lambda: store.history(inv_id))  # type: ignore[attr-defined]
    print(f"Replay of a {len(history.calls):,}-call history ({HISTORY_ROUNDS} turns of {TURN}), median ms:")
    print(f"  read the history from the store: {read:.2f} ms")
    base = None
    for fmt in FORMATS:
        render_ms = median_ms(lambda fmt=fmt: replay_history(history, fmt, recorded))
        full_ms = median_ms(lambda fmt=fmt: replay(store, inv_id, fmt))  # type: ignore[arg-type]
        base = base or render_ms
        print(f"  {fmt:<17} render {render_ms:7.2f} ms ({render_ms / len(history.calls) * 1e3:5.2f} µs/call, "
              f"{render_ms / base:4.2f}× openai)   read + render {full_ms:7.2f} ms")
    rt.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(per_call(Path(tmp)))
        asyncio.run(waiting_turns(Path(tmp)))
        port_only(Path(tmp))
        sqlite_floor(Path(tmp))
        replay_speed(Path(tmp))


if __name__ == "__main__":
    main()
