"""OS errors on every workspace tool path: the ones a model causes are recoverable `workspace.*`
results; the host's (disk full, read-only filesystem, I/O error) propagate out of `Invocation.run`
and change nothing. Races with another process never escape."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.workspace.conftest import Model
from tooldeck.workspace import errors as E

LONG_NAME = "output/" + "a" * 300
DEEP_PATH = "output/" + "/".join(["b" * 200] * 25)  # every name fits, the whole path does not


def every_tool_on(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [("read_file", {"path": path}), ("write_file", {"path": path, "content": "x"}),
            ("write_file", {"path": path, "content": "x", "mode": "append"}),
            ("apply_patch", {"path": path, "old_string": "a", "new_string": "b"}),
            ("remove_file", {"path": path}), ("restore_file", {"path": path}),
            ("restore_file", {"path": path, "version": 1}), ("commit", {"path": path}),
            ("list_files", {"path": path}), ("search_files", {"pattern": "x", "path": path})]


def test_a_name_too_long_is_the_models_to_fix_on_every_tool(model: Model) -> None:
    """R6: `File name too long` escaped write_file, read_file and list_files as a host fault."""
    path = LONG_NAME
    results = model.turn(*every_tool_on(path))
    codes = [r.error_code for r in results]
    assert all(r.is_error for r in results), codes
    by_tool = dict(zip([name for name, _ in every_tool_on(path)], codes, strict=False))
    for tool in ("read_file", "list_files", "search_files", "remove_file", "commit"):
        assert by_tool[tool] == E.PATH_TOO_LONG, (tool, by_tool[tool])
    assert codes[1] == codes[2] == E.PATH_TOO_LONG
    assert codes[3] == E.PATCH_REQUIRES_READ
    assert codes[5] == E.RESTORE_NOTHING_TO_RESTORE and codes[6] == E.RESTORE_VERSION_NOT_FOUND
    assert "too long" in results[0].content and "shorter" in results[0].content
    assert sorted(os.listdir(model.root / "output")) == []


def test_part_of_a_path_is_a_file(model: Model) -> None:
    model.ok("write_file", path="output/file.md", content="x")
    results = model.turn(*every_tool_on("output/file.md/inner.md"))
    assert all(r.is_error and r.error_code.startswith("workspace.") for r in results), [r.content for r in results]
    assert results[0].error_code == E.FILE_NOT_FOUND and "part of it is a file" in results[0].content
    assert results[8].error_code == E.PATH_NOT_FOUND
    assert (model.root / "output" / "file.md").read_text() == "x"


def test_versions_listed_while_another_process_prunes_them(model: Model) -> None:
    """R7, deterministically: a version listed but gone when it is looked at (a dangling entry)."""
    for i in range(3):
        if i:
            model.ok("read_file", path="output/v.md")
        model.ok("write_file", path="output/v.md", content=f"v{i}")
    vdir = next((model.root / ".tooldeck" / "versions").iterdir())
    (vdir / "00000099").symlink_to(vdir / "gone")
    r = model.err("restore_file", E.RESTORE_VERSION_NOT_FOUND, path="output/v.md", version=50)
    assert "Earlier versions, newest first: 2 (" in r.content
    model.ok("read_file", path="output/v.md")
    model.ok("write_file", path="output/v.md", content="v3")
    model.ok("restore_file", path="output/v.md", version=1)
    assert (model.root / "output" / "v.md").read_text() == "v0"


CHURN = textwrap.dedent('''
    import os, shutil, sys, time
    import tooldeck
    home, seconds = sys.argv[1], float(sys.argv[2])
    rt = tooldeck.open(home, records=False)
    inv = rt.invocation(run_id="race", profile={"max_calls_per_invocation": 1_000_000})
    root = inv.run_state.workspace_root
    end = time.monotonic() + seconds
    i = 0
    print("ready", flush=True)
    while time.monotonic() < end:
        i += 1
        d = root / "scratch" / "churn" / f"d{i % 4}"
        shutil.rmtree(d, ignore_errors=True)
        for j in range(6):
            sub = d / f"s{j}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / "f.txt").write_text(f"needle {i} {j}\\n")
        inv.run([{"id": f"a{i}", "name": "workspace_write_file",
                  "arguments": {"path": "output/v.md", "content": f"x{i}", "mode": "append"}}])
    rt.close()
    print(i, flush=True)
''')


def test_races_with_another_process_never_escape(tmp_path: Path) -> None:
    """Another process removes and re-creates folders and prunes versions while this one lists, searches,
    reads and lists versions: every result is a success or a documented recoverable error."""
    import tooldeck

    home = tmp_path / "home"
    rt = tooldeck.open(home, records=False)
    inv = rt.invocation(run_id="race", profile={"max_calls_per_invocation": 1_000_000})
    (inv.run_state.workspace_root / "scratch" / "churn").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    churn = subprocess.Popen([sys.executable, "-c", CHURN, str(home), "3"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    assert churn.stdout is not None and churn.stdout.readline().strip() == "ready"
    allowed = {None, E.FILE_NOT_FOUND, E.PATH_NOT_FOUND, E.RESTORE_VERSION_NOT_FOUND}
    seen: dict[str | None, int] = {}
    calls = [("list_files", {"path": "scratch/churn", "depth": 4}), ("search_files", {"pattern": "needle"}),
             ("search_files", {"pattern": "needle", "path": "scratch/churn/d1"}),
             ("read_file", {"path": "scratch/churn/d2/s3/f.txt"}), ("restore_file", {"path": "output/v.md",
                                                                                 "version": 999_999})]
    rounds = 0
    while churn.poll() is None:
        rounds += 1
        for name, args in calls:
            [r] = inv.run([{"id": f"{name}{rounds}", "name": f"workspace_{name}", "arguments": args}])
            assert r.error_code in allowed, (name, r.error_code, r.content)
            seen[r.error_code] = seen.get(r.error_code, 0) + 1
    _out, err = churn.communicate()
    assert churn.returncode == 0, err[-2000:]
    rt.close()
    assert rounds > 5 and seen.get(None, 0) > 0, (rounds, seen)


@pytest.mark.parametrize("tool", ["read_file", "search_files", "write_file", "apply_patch", "list_files"])
def test_an_io_error_is_a_host_fault_that_propagates(model: Model, monkeypatch: pytest.MonkeyPatch,
                                                     tool: str) -> None:
    from tooldeck.workspace import fs

    model.ok("write_file", path="output/sub/a.md", content="alpha\n")
    model.ok("read_file", path="output/sub/a.md")

    def eio(*_args: Any, **_kwargs: Any) -> Any:
        raise OSError(errno.EIO, "Input/output error")

    target = {"read_file": "read_at", "search_files": "read_at", "write_file": "install", "apply_patch": "install",
              "list_files": "scan"}[tool]
    monkeypatch.setattr(fs, target, eio)
    args = {"read_file": {"path": "output/sub/a.md"}, "search_files": {"pattern": "alpha"},
            "write_file": {"path": "output/sub/a.md", "content": "beta\n"},
            "apply_patch": {"path": "output/sub/a.md", "old_string": "alpha", "new_string": "beta"},
            "list_files": {"path": "output"}}[tool]
    with pytest.raises(OSError) as info:
        model.call(tool, **args)
    assert info.value.errno == errno.EIO
    monkeypatch.undo()
    assert (model.root / "output" / "sub" / "a.md").read_text() == "alpha\n"
    assert [p.name for p in (model.root / "output" / "sub").iterdir()] == ["a.md"]  # no temp file left


FULL_DISK = textwrap.dedent('''
    import errno, json, os, subprocess, sys
    home = sys.argv[1]
    os.makedirs(home)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", home]).returncode:
        print(json.dumps({"skip": "cannot mount a tmpfs"})); sys.exit(0)
    import tooldeck
    rt = tooldeck.open(home, records=False)
    inv = rt.invocation(run_id="full")
    out = {}
    def call(name, **args):
        try:
            [r] = inv.run([{"id": "c", "name": "workspace_" + name, "arguments": args}])
            return [r.error_code, r.content[:200]]
        except OSError as exc:
            return ["raised", errno.errorcode.get(exc.errno, str(exc.errno))]
    out["small"] = call("write_file", path="output/a.md", content="small\\n")
    out["full"] = call("write_file", path="output/big.md", content="x" * 2_000_000)
    out["append"] = call("write_file", path="output/a.md", content="y" * 2_000_000, mode="append")
    root = inv.run_state.workspace_root
    out["left"] = sorted(os.listdir(root / "output"))
    out["a"] = (root / "output" / "a.md").read_text()
    subprocess.run(["mount", "-o", "remount,ro", home], check=True)
    out["ro_write"] = call("write_file", path="output/c.md", content="c")
    out["ro_read"] = call("read_file", path="output/a.md")
    out["ro_list"] = call("list_files", path="output")
    rt.close()
    print(json.dumps(out))
''')


def test_disk_full_and_read_only_filesystem_are_host_faults(tmp_path: Path) -> None:
    """A real 1 MiB tmpfs in a private mount namespace: ENOSPC and EROFS propagate, reads still work."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is not installed")
    flags = ["-m"] if os.geteuid() == 0 else ["-Urm"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([unshare, *flags, "--propagation", "private", sys.executable, "-c", FULL_DISK,
                           str(tmp_path / "home")], capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0 and "unshare" in proc.stderr:
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(out["skip"])
    assert out["small"][0] is None
    assert out["full"] == ["raised", "ENOSPC"]
    assert out["append"] == ["raised", "ENOSPC"]
    assert out["left"] == ["a.md"] and out["a"] == "small\n"  # nothing half-written, no temp file left
    assert out["ro_write"] == ["raised", "EROFS"]
    assert out["ro_read"][0] is None and "small" in out["ro_read"][1]
    assert out["ro_list"][0] is None


PERMISSIONS = textwrap.dedent('''
    import json, os, sys
    import tooldeck
    rt = tooldeck.open(sys.argv[1], records=False)
    inv = rt.invocation(run_id="perm", profile={"max_calls_per_invocation": 100})
    def call(name, **args):
        [r] = inv.run([{"id": "c", "name": "workspace_" + name, "arguments": args}])
        return [r.error_code, r.content[:300]]
    out = {"write": call("write_file", path="output/sub/a.md", content="alpha\\n")}
    root = inv.run_state.workspace_root
    os.chmod(root / "output" / "sub" / "a.md", 0)  # what `chmod 000` in the shell does
    out["read"] = call("read_file", path="output/sub/a.md")
    out["append"] = call("write_file", path="output/sub/a.md", content="x", mode="append")
    out["search"] = call("search_files", pattern="alpha")
    os.chmod(root / "output" / "sub", 0)
    out["list_sub"] = call("list_files", path="output/sub")
    out["list_parent"] = call("list_files", path="output")
    out["write_in"] = call("write_file", path="output/sub/b.md", content="b")
    os.chmod(root / "output" / "sub", 0o755)
    os.chmod(root / "output" / "sub" / "a.md", 0o644)
    out["after"] = call("read_file", path="output/sub/a.md")
    rt.close()
    print(json.dumps(out))
''')


def test_permissions_changed_by_the_model_are_recoverable(tmp_path: Path) -> None:
    """The shell's `chmod` can make a workspace file unreadable; the file tools then say so and how to fix it.
    As root, the check runs without the capabilities that bypass file permissions."""
    cmd = [sys.executable, "-c", PERMISSIONS, str(tmp_path / "home")]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: permissions cannot be enforced")
        cmd = [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *cmd]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["write"][0] is None
    for key in ("read", "append", "list_sub", "write_in"):
        assert out[key][0] == E.PERMISSION_DENIED and "chmod" in out[key][1], (key, out[key])
    assert out["search"][0] is None and "skipped 1" in out["search"][1]
    assert out["list_parent"][0] is None and "sub/" in out["list_parent"][1]
    assert out["after"][0] is None and "alpha" in out["after"][1]


def test_a_path_longer_than_path_max_works_on_every_tool(model: Model) -> None:
    """Files are opened folder by folder (`openat`), so only each name is limited, not the whole path."""
    model.ok("write_file", path=DEEP_PATH + "/x.md", content="deep\n")
    assert "deep" in model.ok("read_file", path=DEEP_PATH + "/x.md").content
    model.ok("apply_patch", path=DEEP_PATH + "/x.md", old_string="deep", new_string="deeper")
    assert model.ok("search_files", pattern="deeper", path=DEEP_PATH).structured["total"] == 1
    assert "x.md" in model.ok("list_files", path=DEEP_PATH).content
    model.ok("restore_file", path=DEEP_PATH + "/x.md", version=1)
    model.ok("remove_file", path=DEEP_PATH + "/x.md")
    model.ok("restore_file", path=DEEP_PATH + "/x.md")
    assert "deep" in model.ok("read_file", path=DEEP_PATH + "/x.md").content
