"""Fixtures: a real temp home with script tool folders, and a runtime over it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tooldeck.core.results import AgentToolResult

_ids = itertools.count(1)


def write_tool(home: Path, name: str, body: str, entry: str = "script.py", kind: str = "script",
               **meta: Any) -> Path:
    """Create `<home>/tools/<kind>/<name>/` with a tool.json (name, description, meta) and the entry script."""
    folder = home / "tools" / kind / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tool.json").write_text(json.dumps({"name": name, "description": f"The {name} tool.", **meta}))
    (folder / entry).write_text(body)
    return folder


def call(inv: tooldeck.Invocation, name: str, /, **args: Any) -> AgentToolResult:
    return inv.run([{"id": f"call_{next(_ids)}", "name": name, "arguments": args}])[0]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def runtime(make_runtime: MakeRuntime, home: Path) -> tooldeck.Runtime:
    return make_runtime(home=home, records=False)
