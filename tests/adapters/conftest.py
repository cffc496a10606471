"""Fixtures for the adapter tests: a real tooldeck home in a temp dir (workspaces, records.sqlite),
with one extension tool beside the builtins, closed after each test."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime as BaseMakeRuntime
from tooldeck.records.reader import InvocationHistory
from tooldeck.records.store import SqliteRecorder

MakeRuntime = Callable[..., tooldeck.Runtime]


def add_extension_tools(rt: tooldeck.Runtime) -> None:
    @rt.tool(extension_id="weather")
    async def forecast(city: str, days: int = 1) -> dict[str, Any]:
        """Weather forecast for a city.

        Args:
            city: City name.
            days: How many days ahead.
        """
        await asyncio.sleep(0)
        return {"city": city, "days": days, "sky": "clear"}


@pytest.fixture
def make_runtime(make_runtime: BaseMakeRuntime) -> MakeRuntime:
    """The shared `make_runtime` (tests/conftest.py, which closes what it opens), with the weather tool added."""
    def factory(profile: dict[str, Any] | None = None, *, records: bool = True,
                home: str = "home") -> tooldeck.Runtime:
        rt = make_runtime(home=home, profile=profile or {}, records=records)
        add_extension_tools(rt)
        return rt

    return factory


def history(rt: tooldeck.Runtime, invocation_id: str) -> InvocationHistory:
    """The invocation's calls as a separate reader of the SQLite file finds them."""
    reader = SqliteRecorder(rt.home / "records.sqlite")
    try:
        return reader.history(invocation_id)
    finally:
        reader.close()


def only_invocation(rt: tooldeck.Runtime, run_id: str) -> str:
    reader = SqliteRecorder(rt.home / "records.sqlite")
    try:
        found = reader.list_invocations(run_id=run_id)
    finally:
        reader.close()
    assert len(found) == 1, found
    return found[0].invocation_id


def workspace(rt: tooldeck.Runtime, run_id: str) -> Path:
    return rt.home / "workspaces" / run_id
