"""Stored secrets are redacted from the first call (policy/stored_secrets.py): a value another process stored,
which no config names and this process never read, printed by a tool, reaches neither the model nor the records;
nor does one stored while the process runs. The store is looked at only when it changed, and not at all when
nothing was ever stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tooldeck.policy import stored_secrets
from tooldeck.policy.stored_secrets import StoredSecrets
from tooldeck.secrets.filebox import FileBox

ECHO = Path(__file__).parent / "fixtures" / "stored_secret_echo.py"
TOOLDECK = Path(sys.executable).with_name("tooldeck")


def _holding(root: Path, values: list[str], skip: Path) -> list[str]:
    return [f"{p}: {v}" for p in root.rglob("*") if p.is_file() and not p.resolve().is_relative_to(skip.resolve())
            for v in values if v.encode() in p.read_bytes()]


def test_a_value_stored_by_another_process_is_redacted_from_the_first_call(tmp_path: Path) -> None:
    env = {**os.environ, "TOOLDECK_SECRETS_BACKEND": "file", "TOOLDECK_SECRETS_DIR": str(tmp_path / "secrets")}
    first, second = f"first-{uuid.uuid4().hex}", f"second-{uuid.uuid4().hex}"
    stored = subprocess.run([str(TOOLDECK), "secret", "set", "STORED_FIRST"], input=first, text=True, env=env,
                            capture_output=True, timeout=120)  # process A, before B starts
    assert stored.returncode == 0, stored.stderr
    home = tmp_path / "home"
    home.mkdir()  # no tooldeck.toml, no mcp.json: nothing names either secret
    scratch = home / "workspaces" / "run_echo" / "scratch"
    scratch.mkdir(parents=True)
    (scratch / "first.env").write_text(f"FIRST={first}\n")

    done = subprocess.run([sys.executable, str(ECHO), str(home), str(TOOLDECK), first, "STORED_SECOND", second],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["first"].endswith("FIRST=[redacted: STORED_FIRST]") and first not in out["first"], out
    assert out["second"].endswith("SECOND=[redacted: STORED_SECOND]") and second not in out["second"], out
    assert out["wal_size"] > 0 and out["open_holds"] == []  # records file and -wal while the store was open
    assert (home / "records.sqlite").is_file()
    assert _holding(home, [first, second], skip=scratch) == []  # after close: records, spills, logs


def test_the_store_is_read_once_per_change_and_never_when_nothing_was_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "secrets"
    monkeypatch.setenv("TOOLDECK_SECRETS_DIR", str(directory))
    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "file")
    monkeypatch.setattr(stored_secrets, "CHECK_EVERY_NS", 0)
    loads: list[dict[str, str]] = []
    remembered: list[tuple[str, str]] = []

    def load() -> dict[str, str]:
        loads.append(stored_secrets.load_store())
        return loads[-1]

    watch = StoredSecrets(lambda pairs: remembered.extend(pairs), load)
    for _ in range(5):
        watch.sync()
    assert loads == [] and not directory.exists()  # nothing stored: no load, nothing created

    FileBox(directory).set("ONE", "one-value-123")
    old = time.time() - 60  # past the racy window: the stamp can be trusted
    os.utime(directory, (old, old))
    for _ in range(5):
        watch.sync()
    assert loads == [{"ONE": "one-value-123"}] and remembered == [("ONE", "one-value-123")]

    FileBox(directory).set("TWO", "two-value-456")  # a change: read again, once it is old enough to trust
    os.utime(directory, (old + 1, old + 1))
    for _ in range(5):
        watch.sync()
    assert len(loads) == 2 and ("TWO", "two-value-456") in remembered


def test_a_fresh_change_is_read_again_until_it_is_old_enough_to_trust(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write within one mtime tick of the last read keeps the stamp: while the directory is that young,
    every look reads the store again, so a second write in the same tick is not missed."""
    directory = tmp_path / "secrets"
    monkeypatch.setenv("TOOLDECK_SECRETS_DIR", str(directory))
    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "file")
    monkeypatch.setattr(stored_secrets, "CHECK_EVERY_NS", 0)
    remembered: list[tuple[str, str]] = []
    watch = StoredSecrets(lambda pairs: remembered.extend(pairs))
    FileBox(directory).set("ONE", "one-value-123")
    watch.sync()
    frozen = directory.stat().st_mtime_ns
    FileBox(directory).set("TWO", "two-value-456")
    os.utime(directory, ns=(frozen, frozen))  # the second write landed in the same tick: same stamp
    watch.sync()
    assert ("TWO", "two-value-456") in remembered


def test_looks_are_spaced_by_the_check_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "secrets"
    monkeypatch.setenv("TOOLDECK_SECRETS_DIR", str(directory))
    monkeypatch.setattr(stored_secrets, "CHECK_EVERY_NS", 3_600 * 10**9)
    loads: list[int] = []
    watch = StoredSecrets(lambda pairs: None, lambda: loads.append(1) or {})
    FileBox(directory).set("ONE", "one-value-123")
    watch.sync()  # the first look of the process is always made
    FileBox(directory).set("TWO", "two-value-456")
    watch.sync()  # within the interval: not looked at
    assert loads == [1]


def test_an_unreadable_store_is_reported_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "secrets"
    monkeypatch.setenv("TOOLDECK_SECRETS_DIR", str(directory))
    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "file")
    FileBox(directory).set("ONE", "one-value-123")
    (directory / "secrets.key").unlink()  # the values cannot be decrypted any more
    remembered: list[tuple[str, str]] = []
    watch = StoredSecrets(lambda pairs: remembered.extend(pairs))
    with caplog.at_level("WARNING", logger="tooldeck.secrets"):
        watch.sync()
    assert remembered == []
    [record] = [r for r in caplog.records if r.name == "tooldeck.secrets"]
    assert "cannot be read for redaction" in record.getMessage() and "secrets.key" in record.getMessage()
