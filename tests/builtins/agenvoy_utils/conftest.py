"""Every test here keeps its secrets in its own temp dir (the encrypted-file backend, as on a headless
machine) and leaves no secret prompt behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tooldeck.secrets import prompt


@pytest.fixture(autouse=True)
def secrets_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    where = tmp_path / "user-secrets"
    monkeypatch.setenv("TOOLDECK_SECRETS_DIR", str(where))
    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "file")
    previous = prompt.set_prompt(None)
    yield where
    prompt.set_prompt(previous)
