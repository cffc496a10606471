"""`error_history` / `write_error` through a real Runtime over the home's records file: writing, search by
substring and by error class, read by hash, the 90-day life refreshed on use, Agenvoy's error texts,
two processes on one home, and keyword search over any text (LIKE wildcards included)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tooldeck.records.error_memory import TTL_S, ErrorMemory, error_class


@pytest.mark.parametrize(("text", "kind"), [
    ("tool not found: x", "tool_not_exist"), ("path is required", "required_param"),
    ("invalid argument", "invalid_param"), ("context deadline exceeded", "timeout"),
    ("403 Forbidden", "permission"), ("no data", "no_result"), ("file not found", "no_result"),
    ("disk on fire", "other"),
])
def test_error_classes(text: str, kind: str) -> None:
    assert error_class(text) == kind


@pytest.fixture
def tools(make_runtime: MakeRuntime) -> Any:
    rt = make_runtime(loading="eager", allow=["builtin:error_history", "builtin:write_error"])

    def call(name: str, args: dict[str, Any]) -> Any:
        [result] = rt.invocation(run_id="r").run([{"id": "c", "name": name, "arguments": args}])
        return result

    call.home = rt.home  # type: ignore[attr-defined]
    return call


def _write(tools: Any, **fields: Any) -> str:
    args = {"tool_name": "fetch_page", "keywords": ["Fetch", "fetch", "html"], "symptom": "request timeout",
            "action": "retried with force", "outcome": "resolved", **fields}
    result = tools("write_error", args)
    assert not result.is_error, result.content
    assert result.content.startswith("recorded ")
    return result.content.split()[1]


def test_write_search_and_read(tools: Any) -> None:
    first = _write(tools)
    second = _write(tools, symptom="page is empty", cause="javascript only site", outcome="abandoned",
                    keywords=["spa"])
    found = json.loads(tools("error_history", {"keyword": "EMPTY"}).content)
    assert [r["id"] for r in found] == [second] and found[0]["cause"] == "javascript only site"
    assert found[0]["keywords"] == ["spa", "error_type:other"]  # "empty" alone is no class; "empty result" is
    both = json.loads(tools("error_history", {"keyword": "fetch"}).content)
    assert [r["id"] for r in both] == [second, first]  # newest first
    # within one tool, the keyword's error class finds a record that does not contain the words
    by_class = json.loads(tools("error_history", {"keyword": "deadline exceeded", "tool_name": "fetch_page"}).content)
    assert [r["id"] for r in by_class] == [first]
    assert json.loads(tools("error_history", {"keyword": "deadline exceeded"}).content) == []
    read = tools("error_history", {"hash": first})  # mode inferred from hash
    assert json.loads(read.content)["action"] == "retried with force"
    assert tools("error_history", {"mode": "read", "hash": "00000000"}).content == "not found"


def test_agenvoy_error_texts(tools: Any) -> None:
    unknown = tools("error_history", {"mode": "list", "keyword": "x"})
    assert unknown.is_error and unknown.content.startswith('unknown mode "list"; available: search, read')
    missing = tools("error_history", {"mode": "search"})
    assert missing.is_error and missing.content.startswith("keyword is required when mode=search")
    no_hash = tools("error_history", {"mode": "read"})
    assert no_hash.content.startswith("hash is required when mode=read")
    bad = tools("write_error", {"tool_name": "x", "keywords": [" "], "symptom": "s", "action": "a",
                                "outcome": "failed"})
    assert bad.is_error and bad.error_code == "memory.field_required"
    wrong = tools("write_error", {"tool_name": "x", "keywords": ["k"], "symptom": "s", "action": "a",
                                  "outcome": "maybe"})
    assert wrong.is_error and wrong.error_code == "tool.invalid_arguments"


def test_limit_and_life(tmp_path: Path) -> None:
    memory = ErrorMemory(tmp_path / "records.sqlite")
    ids = [memory.write("t", ["k"], f"symptom {i}", "a", "failed", now=1000.0 + i).id for i in range(20)]
    assert [r.id for r in memory.search("symptom", now=1100.0)] == ids[::-1][:4]
    assert len(memory.search("symptom", limit=50, now=1100.0)) == 16
    assert memory.read(ids[0], now=1000.0 + TTL_S + 1) is None  # expired
    assert memory.read(ids[19], now=1000.0 + TTL_S - 1) is not None  # returned: its life starts again
    assert memory.read(ids[19], now=1000.0 + 2 * TTL_S - 10) is not None
    assert memory.read(ids[18], now=1000.0 + 2 * TTL_S - 10) is None


_OTHER_PROCESS = """
import sys
from tooldeck.records.error_memory import ErrorMemory
print(ErrorMemory(sys.argv[1]).write("shell", ["exit"], "exit code 2", "fixed the flag", "resolved").id)
"""


def test_another_process_of_the_home_sees_the_record(tools: Any) -> None:
    path = tools.home / "records.sqlite"
    rid = subprocess.run([sys.executable, "-c", _OTHER_PROCESS, str(path)], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()
    assert json.loads(tools("error_history", {"hash": rid}).content)["symptom"] == "exit code 2"


@settings(derandomize=True, max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab%_\\'\"é ")), min_size=1, max_size=12))
def test_any_substring_of_a_symptom_finds_it(tmp_path: Path, symptom: str) -> None:
    memory = ErrorMemory(tmp_path / "records.sqlite")
    record = memory.write("t", ["k"], f"<{symptom}>", "a", "failed")
    needle = f"<{symptom}>".strip().lower()
    assert record.id in [r.id for r in memory.search(needle, limit=16)]
    others = [r for r in memory.search(needle, limit=16) if needle not in f"{r.tool_name} {r.symptom} "
              f"{r.cause or ''} {json.dumps(r.keywords, ensure_ascii=False)}".lower()]
    assert others == []
