"""`tooldeck secret set | list | remove` in a real process: the value from stdin, never printed back, then
readable by the store; bad names and empty values refused with exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tooldeck.secrets.filebox import FileBox


def _cli(secrets_dir: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLDECK_SECRETS_DIR": str(secrets_dir), "TOOLDECK_SECRETS_BACKEND": "file"}
    return subprocess.run([sys.executable, "-m", "tooldeck.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=120, env=env)


def test_set_list_remove(secrets_dir: Path) -> None:
    done = _cli(secrets_dir, "secret", "set", "GITHUB_TOKEN", stdin="ghp_value-1\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "stored GITHUB_TOKEN (file)\n" and "ghp_value-1" not in done.stdout + done.stderr
    assert FileBox(secrets_dir).get("GITHUB_TOKEN") == "ghp_value-1"
    assert _cli(secrets_dir, "secret", "list").stdout == "GITHUB_TOKEN\n"
    assert _cli(secrets_dir, "secret", "remove", "GITHUB_TOKEN").returncode == 0
    assert _cli(secrets_dir, "secret", "list").stdout == ""
    missing = _cli(secrets_dir, "secret", "remove", "GITHUB_TOKEN")
    assert missing.returncode == 2 and "secret.missing" in missing.stderr


def test_bad_input_stores_nothing(secrets_dir: Path) -> None:
    bad = _cli(secrets_dir, "secret", "set", "not-a-name", stdin="v")
    assert bad.returncode == 2 and "secret.invalid_name" in bad.stderr
    empty = _cli(secrets_dir, "secret", "set", "EMPTY", stdin="\n")
    assert empty.returncode == 2 and "secret.empty" in empty.stderr
    assert not (secrets_dir / "secrets.enc").exists()
