"""Shared timing helpers: medians over repeated batches, printed with ratios to a baseline."""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

REPEATS_ALLOWED = 10**9
"""`max_identical_calls` for benches, which repeat one call on purpose: the repeated-call guard still runs
(its cost is in every figure) but never refuses a streak. It must be in the Profile the invocation uses (a
Profile given to `rt.invocation` replaces the Runtime's), and it does not turn off the A-B-A-B check: two
different calls alternating one per turn with unchanged results are still refused, so check results."""


Check = Callable[[Any], object]
"""Called, outside the clock, with the last value of each timed batch; it raises when that value is not
the work the bench means to time (a refusal, an error). `expect_ok` is the usual one."""


def expect_ok(value: Any) -> None:
    """Raise unless `value` (a tool result, or a list of them, as `Invocation.run` returns) holds no error:
    a refused or failed call is not the work a bench times. Refusals are sticky (a streak past
    `max_identical_calls`, a spent budget), so checking the last result of each batch catches them."""
    for result in value if isinstance(value, list | tuple) else (value,):
        if getattr(result, "is_error", False):
            raise AssertionError(f"a timed call failed ({result.error_code}): {result.content[:300]}")


def same_as(first: Any) -> Check:
    """A check that a one-call turn's result has the content of `first` (a result of the same call taken
    before timing) and no error."""
    def check(out: Any) -> None:
        [result] = out
        if result.is_error or result.content != first.content:
            raise AssertionError(f"a timed call returned something else ({result.error_code}): {result.content[:300]}")
    return check


def median_us(fn: Callable[[], object], inner: int, repeats: int = 15, check: Check | None = None) -> float:
    """Median per-iteration time in µs of `fn`, over `repeats` batches of `inner` iterations."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            out = fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
        if check is not None:
            check(out)
    return statistics.median(samples)


async def amedian_us(fn: Callable[[], Awaitable[object]], inner: int, repeats: int = 15,
                     check: Check | None = None) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            out = await fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
        if check is not None:
            check(out)
    return statistics.median(samples)


def report(rows: list[tuple[str, float]], baseline: str) -> None:
    base = dict(rows)[baseline]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value:9.2f} µs   {value / base:6.2f}× {baseline}")


async def ainterleaved_us(variants: dict[str, Callable[[], Awaitable[object]]], inner: int, repeats: int = 25,
                          per_call_divisor: dict[str, int] | None = None, warmup: int = 0,
                          check: Check | None = None) -> list[tuple[str, float]]:
    """Median µs per iteration of each variant, measured round-robin so that load on a shared machine
    falls on every variant alike (the ratios are what to read). `warmup` calls of each variant first
    (connections, validators, first listings). `check`: see `Check` (warm-up results are checked too)."""
    for fn in variants.values():
        for _ in range(warmup):
            out = await fn()
            if check is not None:
                check(out)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    divisor = per_call_divisor or {}
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            for _ in range(inner):
                out = await fn()
            samples[name].append((time.perf_counter() - start) / inner * 1e6 / divisor.get(name, 1))
            if check is not None:
                check(out)
    return [(name, statistics.median(values)) for name, values in samples.items()]


async def ainterleaved_ms(variants: dict[str, Callable[[], Awaitable[object]]], inner: int,
                          repeats: int) -> dict[str, float]:
    """`ainterleaved_us` in milliseconds, after 5 warm-up calls of each variant."""
    rows = await ainterleaved_us(variants, inner, repeats, warmup=5)
    return {name: us / 1e3 for name, us in rows}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")
