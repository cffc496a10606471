"""`--help` is clean and fits 80 columns; `--version` works (issue 13.7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldeck import __version__
from tooldeck.cli.app import COMMANDS
from tooldeck.cli.records_cmd import PROVIDERS_HELP
from tooldeck.protocols import FORMATS

from .support import tooldeck

GROUPS = {"records": ["list", "show"], "mcp": ["list", "tools", "refresh"]}
EVERY_HELP = [[], *([name] for name in COMMANDS), *([g, sub] for g, subs in GROUPS.items() for sub in subs)]


@pytest.mark.parametrize("words", EVERY_HELP, ids=lambda w: " ".join(w) or "tooldeck")
def test_help_has_no_type_placeholders_and_fits_80_columns(words: list[str], tmp_path: Path) -> None:
    proc = tooldeck(*words, "--help", cwd=tmp_path, columns=80)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Usage: tooldeck" in text
    for junk in ("<bool>", "<str>", "<path>", "<int>", "BOOLEAN", "╭", "Traceback"):
        assert junk not in text, (words, junk)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_the_root_help_lists_every_command_once(tmp_path: Path) -> None:
    text = tooldeck("--help", cwd=tmp_path).stdout
    listed = [line.split()[0] for line in text.split("Commands:", 1)[1].splitlines() if line.strip()]
    assert listed == list(COMMANDS)


def test_version(tmp_path: Path) -> None:
    proc = tooldeck("--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"tooldeck {__version__}\n"
    assert not (tmp_path / ".tooldeck").exists()  # it opens no home


def test_bad_usage_exits_two_with_a_plain_message(tmp_path: Path) -> None:
    proc = tooldeck("call", cwd=tmp_path)
    assert proc.returncode == 2 and "Missing argument 'NAME'" in proc.stderr and "╭" not in proc.stderr
    proc = tooldeck("nope", cwd=tmp_path)
    assert proc.returncode == 2 and "No such command 'nope'" in proc.stderr


def test_the_replay_help_names_every_format() -> None:
    assert " | ".join(FORMATS) == PROVIDERS_HELP  # written out so that --help imports no protocol module
