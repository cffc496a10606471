"""Fixtures of the agent tests: `mock_provider`, a loopback mock model server (mock_provider.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.mock_provider import MockProvider


@pytest.fixture
def mock_provider() -> Iterator[MockProvider]:
    with MockProvider() as mock:
        yield mock
    assert not mock.unexpected, f"the mock got requests its script did not expect: {mock.unexpected}"
