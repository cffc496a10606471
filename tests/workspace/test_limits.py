"""The 64 MiB file limit holds on every path that writes (write, append, patch, restore), and it is
checked before the new content is built: nothing is written and memory does not balloon.

Records are off here: the memory measured is the tool path's (recording a 70 MB argument has costs of
its own, which belong to the records store)."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable

import pytest

from tests.conftest import MakeRuntime
from tests.workspace.conftest import Model
from tooldeck.core.results import AgentToolResult

LIMIT = 64 * 1024 * 1024
MIB = 1024 * 1024


@pytest.fixture
def model(make_runtime: MakeRuntime) -> Model:
    return Model(make_runtime(home="home", records=False).invocation())


def peak_during(call: Callable[[], AgentToolResult]) -> tuple[AgentToolResult, int]:
    """The result of `call` and how far traced memory rose above where it started, in bytes (every thread)."""
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - base


def files_in(model: Model, folder: str = "output") -> list[str]:
    return sorted(os.listdir(model.root / folder))


def test_write_over_the_limit_is_refused_before_encoding(model: Model) -> None:
    content = "x" * (70 * 1000 * 1000)  # the reproducer: write_file accepted 70 MB
    result, rise = peak_during(lambda: model.call("write_file", path="output/big.md", content=content))
    assert result.error_code == "workspace.file_too_large", result.content
    assert "70,000,000 bytes" in result.content and "67,108,864" in result.content
    assert files_in(model) == []
    assert rise < 8 * MIB, rise  # the 70 MB were never encoded or copied


def test_multibyte_content_is_measured_in_bytes(model: Model) -> None:
    content = "é" * (LIMIT // 2 + 1)  # fewer characters than the limit, more bytes
    result = model.call("write_file", path="output/wide.md", content=content)
    assert result.error_code == "workspace.file_too_large"
    assert f"{2 * (LIMIT // 2 + 1):,} bytes" in result.content
    assert files_in(model) == []


def test_append_past_the_limit_leaves_the_file_as_it_was(model: Model) -> None:
    (model.root / "output" / "log.md").write_bytes(b"a" * (40 * MIB))
    more = "b" * (30 * MIB)
    result, rise = peak_during(lambda: model.call("write_file", path="output/log.md", content=more, mode="append"))
    assert result.error_code == "workspace.file_too_large", result.content
    assert (model.root / "output" / "log.md").stat().st_size == 40 * MIB
    assert files_in(model) == ["log.md"]
    assert rise < 40 * MIB, rise  # the new text encoded once; the old bytes not even read
    model.ok("write_file", path="output/log.md", content="end\n", mode="append")
    assert (model.root / "output" / "log.md").stat().st_size == 40 * MIB + 4


def test_append_that_creates_a_file_over_the_limit(model: Model) -> None:
    result = model.call("write_file", path="output/new.md", content="z" * (LIMIT + 1), mode="append")
    assert result.error_code == "workspace.file_too_large"
    assert files_in(model) == []


def test_replace_all_cannot_blow_a_small_file_up(model: Model) -> None:
    """The reproducer: `replace_all` turned a 200 KB file into 100 MB (the process peaked at 645 MB). Here a
    45 KB file, small enough to be read in full, would become 71 MB."""
    text = ("x" * 89 + "\n") * 500
    model.ok("write_file", path="output/small.md", content=text)
    assert model.ok("read_file", path="output/small.md").structured["fullRead"]
    big = "y" * 1_600
    result, rise = peak_during(lambda: model.call("apply_patch", path="output/small.md", old_string="x",
                                                  new_string=big, replace_all=True))
    assert result.error_code == "workspace.file_too_large", result.content
    assert f"{45_000 + 44_500 * 1_599:,} bytes" in result.content
    assert (model.root / "output" / "small.md").read_text() == text
    assert rise < 8 * MIB, rise


def test_a_patch_within_the_limit_still_lands(model: Model) -> None:
    model.ok("write_file", path="output/ok.md", content="x\n" * 1_000)
    model.ok("read_file", path="output/ok.md")
    r = model.ok("apply_patch", path="output/ok.md", old_string="x", new_string="yy", replace_all=True)
    assert r.structured["replacements"] == 1_000
    assert (model.root / "output" / "ok.md").read_text() == "yy\n" * 1_000


def test_restoring_a_version_over_the_limit_is_refused_before_reading_it(model: Model) -> None:
    model.ok("write_file", path="output/v.md", content="one\n")
    model.ok("read_file", path="output/v.md")
    model.ok("write_file", path="output/v.md", content="two\n")
    [version_dir] = (model.root / ".tooldeck" / "versions").iterdir()
    with open(version_dir / "00000001", "r+b") as f:  # as an older tooldeck without the limit could leave it
        f.truncate(LIMIT + 1)
    result, rise = peak_during(lambda: model.call("restore_file", path="output/v.md", version=1))
    assert result.error_code == "workspace.file_too_large", result.content
    assert (model.root / "output" / "v.md").read_text() == "two\n"
    assert rise < 8 * MIB, rise
