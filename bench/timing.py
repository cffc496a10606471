"""Shared timing helpers: medians over repeated batches, printed with ratios to a baseline."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable


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
