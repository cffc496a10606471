"""Shared timing helpers: medians over repeated batches, printed with ratios to a baseline."""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Awaitable, Callable

REPEATS_ALLOWED = 10**9
"""`max_identical_calls` for benches, which repeat one call on purpose: the repeated-call guard still runs
(its cost is in every figure) but never refuses."""


def median_us(fn: Callable[[], object], inner: int, repeats: int = 15) -> float:
    """Median per-iteration time in µs of `fn`, over `repeats` batches of `inner` iterations."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(samples)


async def amedian_us(fn: Callable[[], Awaitable[object]], inner: int, repeats: int = 15) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            await fn()
        samples.append((time.perf_counter() - start) / inner * 1e6)
    return statistics.median(samples)


def report(rows: list[tuple[str, float]], baseline: str) -> None:
    base = dict(rows)[baseline]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value:9.2f} µs   {value / base:6.2f}× {baseline}")


async def ainterleaved_us(variants: dict[str, Callable[[], Awaitable[object]]], inner: int, repeats: int = 25,
                          per_call_divisor: dict[str, int] | None = None, warmup: int = 0) -> list[tuple[str, float]]:
    """Median µs per iteration of each variant, measured round-robin so that load on a shared machine
    falls on every variant alike (the ratios are what to read). `warmup` calls of each variant first
    (connections, validators, first listings)."""
    for fn in variants.values():
        for _ in range(warmup):
            await fn()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    divisor = per_call_divisor or {}
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            for _ in range(inner):
                await fn()
            samples[name].append((time.perf_counter() - start) / inner * 1e6 / divisor.get(name, 1))
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
