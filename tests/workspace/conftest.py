"""Fixtures: a real Runtime in a temp home, and a `Model` that sends tool calls like a model turn."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tooldeck.core.results import AgentToolResult
from tooldeck.workspace import for_run


class Model:
    """Sends calls through `Invocation.run`, the way a model turn does."""

    def __init__(self, inv: tooldeck.Invocation) -> None:
        self.inv = inv
        self._ids = itertools.count(1)
        for_run(inv.run_state).policy(inv.profile.workspace)  # what the first tool call does: make the roots

    @property
    def root(self) -> Path:
        return self.inv.run_state.workspace_root

    def turn(self, *calls: tuple[str, dict[str, Any]]) -> list[AgentToolResult]:
        wire = [{"id": f"call_{next(self._ids)}", "name": f"workspace_{name}", "arguments": args}
                for name, args in calls]
        return self.inv.run(wire)

    def call(self, name: str, **args: Any) -> AgentToolResult:
        return self.turn((name, args))[0]

    def ok(self, name: str, **args: Any) -> AgentToolResult:
        result = self.call(name, **args)
        assert not result.is_error, (result.error_code, result.content)
        return result

    def err(self, name: str, code: str, **args: Any) -> AgentToolResult:
        result = self.call(name, **args)
        assert result.is_error and result.error_code == code, (result.error_code, result.content)
        return result


def page_text(result: AgentToolResult) -> list[str]:
    """The file lines shown by a read_file result (header and notes dropped)."""
    lines = result.content.split("\n")[1:]
    return [line.split("\t", 1)[1] for line in lines if "\t" in line and line.split("\t", 1)[0].strip().isdigit()]


@pytest.fixture
def runtime(make_runtime: MakeRuntime) -> tooldeck.Runtime:
    return make_runtime(home="home")


@pytest.fixture
def model(runtime: tooldeck.Runtime) -> Model:
    return Model(runtime.invocation())


@pytest.fixture
def roomy(runtime: tooldeck.Runtime) -> Model:
    """A model whose invocation has no practical call limit (for hypothesis tests that call many times)."""
    return Model(runtime.invocation(profile={"max_calls_per_invocation": 1_000_000}))
