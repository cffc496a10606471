from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .support import ADAPTERS


@pytest.fixture(params=sorted(ADAPTERS))
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """Open (or reopen) the store under test in this test's directory; all are closed afterwards."""
    opened: list[Any] = []

    def factory() -> Any:
        store = ADAPTERS[request.param](tmp_path)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()
