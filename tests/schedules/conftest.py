"""Fixtures of the schedules tests: a home whose default model is the loopback mock provider, with one
skill, and a manual clock in a zone with DST."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.agent.mock_provider import MockProvider
from tooldeck.schedules.clock import ManualClock

NY = ZoneInfo("America/New_York")
KEY = "sk-sched-0123456789"
SKILL_TEXT = "---\nname: daily-report\ndescription: Write the daily report.\n---\nSay REPORT-OK and stop.\n"


@pytest.fixture
def mock_provider() -> Iterator[MockProvider]:
    with MockProvider() as mock:
        yield mock
    assert not mock.unexpected, f"the mock got requests its script did not expect: {mock.unexpected}"


def write_home(home: Path, mock: MockProvider) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "tooldeck.toml").write_text(f"""
[models]
default = "mock"

[models.mock]
provider = "openai"
model = "gpt-mock"
base_url = "{mock.url}/v1"
api_key = "{KEY}"
retry_base_delay = 0.01
max_retries = 0
""", encoding="utf-8")
    skill = home / "skills" / "daily-report"
    skill.mkdir(parents=True, exist_ok=True)
    (skill / "SKILL.md").write_text(SKILL_TEXT, encoding="utf-8")
    return home


@pytest.fixture
def home(tmp_path: Path, mock_provider: MockProvider) -> Path:
    return write_home(tmp_path / "home", mock_provider)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 3, 7, 12, 0, tzinfo=NY))
