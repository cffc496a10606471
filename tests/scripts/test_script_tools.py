"""Script and ext tools: folders under <home>/tools/ run inside the sandboxed shell, through the whole pipeline."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

import tooldeck
from tests.conftest import MakeRuntime
from tests.scripts.conftest import call, write_tool
from tooldeck.sources.script_loader import INVALID, NO_ENTRY
from tooldeck.sources.scripts import MAX_STDOUT_BYTES

PY_ECHO = 'import os, json\nargs = json.loads(os.environ["TOOLDECK_ARGS"])\nprint(json.dumps({"echo": args}))\n'
JS_ECHO = "const args = JSON.parse(process.env.TOOLDECK_ARGS);\nconsole.log(JSON.stringify({echo: args}));\n"
SH_ECHO = 'args=$(cat)\necho "{\\"echo\\": $args}"\n'
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["text"], "additionalProperties": False}


def _names(inv: tooldeck.Invocation) -> set[str]:
    return {b.call_name for b in inv.snapshot.bindings}


@pytest.mark.parametrize(("entry", "body"), [("script.py", PY_ECHO), ("script.js", JS_ECHO), ("script.sh", SH_ECHO)])
def test_echo_in_each_runtime(runtime: tooldeck.Runtime, home: Path, entry: str, body: str) -> None:
    write_tool(home, "echo", body, entry, parameters=SCHEMA)
    inv = runtime.invocation()
    args = {"text": "it's \"quoted\" $HOME `x` ünï", "n": 3}
    r = call(inv, "script_echo", **args)
    assert not r.is_error, r.content
    assert r.tool_id == "script/echo:echo"
    assert r.structured == {"echo": args}
    # the arguments are validated against tool.json's parameters before anything runs
    bad = call(inv, "script_echo", n="three")
    assert bad.is_error and bad.error_code.startswith("tool.")


def test_js_is_chosen_before_python(runtime: tooldeck.Runtime, home: Path) -> None:
    folder = write_tool(home, "both", 'print("python")\n')
    (folder / "script.js").write_text('console.log("js")\n')
    assert call(runtime.invocation(), "script_both").content == "js"


def test_ext_tools_have_their_own_ids_and_names(runtime: tooldeck.Runtime, home: Path) -> None:
    write_tool(home, "same", 'print("script")\n')
    write_tool(home, "same", 'print("ext")\n', kind="ext", concurrent=True)
    inv = runtime.invocation()
    by_name = {b.call_name: b for b in inv.snapshot.bindings}
    assert by_name["script_same"].tool_id == "script/same:same"
    assert by_name["ext_same"].tool_id == "script/ext/same:same"
    assert by_name["ext_same"].descriptor.annotations.concurrency_safe
    assert not by_name["script_same"].descriptor.annotations.concurrency_safe
    assert call(inv, "script_same").content == "script"
    assert call(inv, "ext_same").content == "ext"


def test_plain_text_result_and_failures(runtime: tooldeck.Runtime, home: Path) -> None:
    write_tool(home, "plain", "echo 'not json'\n", "script.sh")
    write_tool(home, "boom", "echo partial\necho 'it broke: bad key' >&2\nexit 3\n", "script.sh")
    write_tool(home, "whine", "echo 'only a warning' >&2\n", "script.sh")
    write_tool(home, "pyraise", 'raise ValueError("no such city")\n')
    inv = runtime.invocation()
    plain = call(inv, "script_plain")
    assert not plain.is_error and plain.content == "not json" and plain.structured is None
    boom = call(inv, "script_boom")
    assert boom.is_error and boom.error_code == "script.failed"
    assert "script error: it broke: bad key" in boom.content and "exit code 3" in boom.content
    whine = call(inv, "script_whine")
    assert whine.is_error and whine.error_code == "script.failed" and "only a warning" in whine.content
    py = call(inv, "script_pyraise")
    assert py.error_code == "script.failed" and "ValueError: no such city" in py.content
    # recoverable: the invocation goes on
    assert not call(inv, "script_plain").is_error


def _size_settles(path: Path) -> int:
    """The file's size once it stops changing for 1.5 s (polled, with a generous deadline)."""
    deadline = time.monotonic() + 30
    last = -1
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        size = path.stat().st_size if path.exists() else 0
        if size != last:
            last, stable_since = size, time.monotonic()
        elif time.monotonic() - stable_since >= 1.5:
            return size
        time.sleep(0.1)
    raise AssertionError(f"{path} kept growing")


def test_timeout_really_stops_the_script(runtime: tooldeck.Runtime, home: Path) -> None:
    write_tool(home, "loop", "i=0\nwhile true; do i=$((i+1)); echo $i >> /scratch/loop.txt; done\n",
               "script.sh", timeout=1)
    write_tool(home, "pyloop", "while True:\n    pass\n", timeout=1)
    inv = runtime.invocation()
    started = time.monotonic()
    r = call(inv, "script_loop")
    assert r.is_error and r.error_code == "script.timeout", r.content
    assert time.monotonic() - started < 20
    log = inv.run_state.workspace_root / "scratch" / "loop.txt"
    assert log.exists() and log.stat().st_size > 0  # it ran
    size = _size_settles(log)
    time.sleep(1.0)
    assert log.stat().st_size == size, "the looping script still writes after its timeout"
    assert call(inv, "script_pyloop").error_code == "script.timeout"
    # the worker pool is usable afterwards
    write_tool(home, "after", "echo fine\n", "script.sh")
    assert call(runtime.invocation(), "script_after").content == "fine"


def test_script_cannot_reach_outside_its_folder_and_the_workspace(runtime: tooldeck.Runtime, home: Path,
                                                                   tmp_path: Path) -> None:
    secret = f"host-secret-{uuid.uuid4().hex}"
    (tmp_path / "secret.txt").write_text(secret)
    other = write_tool(home, "other", "echo other\n", "script.sh")
    (other / "private.txt").write_text(secret)
    probe = "\n".join(f"cat {p} 2>&1; echo" for p in (
        tmp_path / "secret.txt", "/.tool/../../secret.txt", "../other/private.txt", "/.tool/../other/private.txt",
        home / "tools" / "script" / "other" / "private.txt", "/input/x", "/.tooldeck/x"))
    folder = write_tool(home, "probe", probe + "\necho ok > /.tool/planted 2>&1; echo done\n", "script.sh")
    inv = runtime.invocation()
    ws = inv.run_state.workspace_root
    (ws / "input").mkdir(parents=True, exist_ok=True)
    (ws / "input" / "x").write_text(secret)
    r = call(inv, "script_probe")
    assert secret not in r.content
    assert "done" in r.content
    assert not (folder / "planted").exists()
    py = write_tool(home, "pyprobe", f"print(open({str(tmp_path / 'secret.txt')!r}).read())\n")
    r = call(runtime.invocation(), "script_pyprobe")
    assert r.is_error and secret not in r.content
    assert sorted(p.name for p in py.iterdir()) == ["script.py", "tool.json"]


def test_script_reads_its_own_folder_and_writes_the_workspace(runtime: tooldeck.Runtime, home: Path) -> None:
    folder = write_tool(home, "data", "cat /.tool/data.txt > /output/copied.txt\ncat /.tool/data.txt\n", "script.sh")
    (folder / "data.txt").write_text("from the folder")
    inv = runtime.invocation()
    assert call(inv, "script_data").content == "from the folder"
    assert (inv.run_state.workspace_root / "output" / "copied.txt").read_text() == "from the folder"


@pytest.mark.parametrize(("entry", "body"), [
    ("script.py", 'print("x" * 10_000_000)\n'),
    ("script.sh", 's=$(printf "x%.0s" {1..999})\nfor i in $(seq 1 10000); do echo $s; done\n'),
])
def test_ten_megabytes_of_output_are_cut_and_spilled(runtime: tooldeck.Runtime, home: Path, entry: str,
                                                     body: str) -> None:
    write_tool(home, "big", body, entry)
    inv = runtime.invocation()
    r = call(inv, "script_big")
    assert not r.is_error, r.content[:500]
    assert r.structured["externalized"]
    assert len(r.content) < 20_000
    spilled = (inv.run_state.workspace_root / r.structured["path"]).read_text()
    assert spilled.count("x") == MAX_STDOUT_BYTES - 1 or spilled.count("x") >= 1_000_000
    assert "the script's output was cut at 1024 KiB" in spilled


def test_invalid_tool_json_beside_two_valid_ones(runtime: tooldeck.Runtime, home: Path) -> None:
    write_tool(home, "one", "echo 1\n", "script.sh")
    write_tool(home, "two", "echo 2\n", "script.sh")
    bad = write_tool(home, "bad", "echo bad\n", "script.sh", timeout="soon")
    write_tool(home, "noentry", "", "readme.txt")
    (home / "tools" / "script" / "_draft").mkdir()
    (home / "tools" / "script" / "_draft" / "tool.json").write_text("{")
    (home / "tools" / "script" / ".hidden").mkdir()
    inv = runtime.invocation()
    assert {"script_one", "script_two"} <= _names(inv)
    assert not {"script_bad", "script_noentry"} & _names(inv)
    diags = {d.code: d.message for d in runtime.catalog.diagnostics()}
    assert str(bad / "tool.json") in diags[INVALID] and "`timeout`" in diags[INVALID]
    assert "noentry" in diags[NO_ENTRY]
    assert not any("_draft" in d.message for d in runtime.catalog.diagnostics())
    assert call(inv, "script_one").content == "1"


def test_catalog_follows_the_folders_at_the_next_invocation(runtime: tooldeck.Runtime, home: Path) -> None:
    source = runtime.catalog.source("script")
    first = runtime.invocation()
    assert not any(n.startswith("script_") for n in _names(first))
    folder = write_tool(home, "grow", "echo v1\n", "script.sh")
    added = runtime.invocation()
    assert "script_grow" in _names(added) and added.snapshot.id != first.snapshot.id
    reads = source.reads
    same = runtime.invocation()
    assert same.snapshot.id == added.snapshot.id  # nothing changed: the snapshot is reused
    assert source.reads == reads  # and no tool.json was read again
    meta = json.loads((folder / "tool.json").read_text())
    meta["parameters"] = {"type": "object", "properties": {"size": {"type": "integer"}}}
    meta["description"] = "Grown."
    (folder / "tool.json").write_text(json.dumps(meta))
    os.utime(folder / "tool.json", ns=(time.time_ns(), time.time_ns() + 10_000_000))
    changed = runtime.invocation()
    binding = changed.snapshot.by_name()["script_grow"]
    assert changed.snapshot.id != added.snapshot.id
    assert binding.descriptor.description == "Grown." and "size" in binding.descriptor.input_schema["properties"]
    (folder / "script.sh").write_text("echo v2\n")  # the script itself is read at each call
    assert call(changed, "script_grow").content == "v2"
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    removed = runtime.invocation()
    assert "script_grow" not in _names(removed)
    # an invocation prepared before the removal answers "unavailable", running nothing
    gone = call(changed, "script_grow")
    assert gone.is_error


def test_always_allow_and_timeout_reach_the_gate(make_runtime: MakeRuntime, home: Path) -> None:
    write_tool(home, "trusted", "echo yes\n", "script.sh", always_allow=True)
    write_tool(home, "plain", "echo no\n", "script.sh")
    rt = make_runtime(home=home, records=False, default_permission="ask")
    inv = rt.invocation()
    assert call(inv, "script_trusted").content == "yes"
    refused = call(inv, "script_plain")
    assert refused.is_error and refused.error_code == "tool.permission_denied"
    # an explicit Profile permission wins over always_allow
    rt2 = make_runtime(home=home, records=False, default_permission="allow",
                       permissions={"script/trusted:*": "deny"})
    assert call(rt2.invocation(), "script_trusted").error_code == "tool.permission_denied"


def test_tool_json_timeout_longer_than_the_profile_default(make_runtime: MakeRuntime, home: Path) -> None:
    write_tool(home, "slowish", "sleep 2\necho done\n", "script.sh", timeout=10)
    rt = make_runtime(home=home, records=False, tool_timeout_s=1)
    assert call(rt.invocation(), "script_slowish").content == "done"
