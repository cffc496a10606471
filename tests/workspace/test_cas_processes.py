"""Compare-and-swap across processes: three processes read-modify-write one counter file through the
real tools (`tooldeck.open(home).invocation(...).run(...)`), sharing one home and one run workspace.
Every swap either lands or is refused as stale; none is lost. The lock is the OS's, so it dies with its
process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import tooldeck
from tests.workspace.conftest import Model
from tooldeck.catalog.profile import WorkspaceRoots

PROCESSES = 3
ROUNDS = 80
PATH = "output/counter.md"
RUN = "shared"

WORKER = textwrap.dedent('''
    import json, os, sys, time
    import tooldeck
    home, mode, rounds, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rt = tooldeck.open(home, records=False)
    inv = rt.invocation(run_id="shared", profile={"max_calls_per_invocation": 10 * rounds})
    while not os.path.exists(go):
        time.sleep(0.001)
    applied = conflicts = 0
    for i in range(rounds):
        [read] = inv.run([{"id": f"r{i}", "name": "workspace_read_file", "arguments": {"path": "output/counter.md"}}])
        assert not read.is_error, read.content
        value = int(read.content.split("\\n")[1].split("\\t")[1])
        path = "output/counter.md"
        if mode == "write":
            call = {"name": "workspace_write_file", "arguments": {"path": path, "content": str(value + 1)}}
        else:
            call = {"name": "workspace_apply_patch",
                    "arguments": {"path": path, "old_string": str(value), "new_string": str(value + 1)}}
        [res] = inv.run([{"id": f"w{i}", **call}])
        if res.is_error:
            assert res.error_code in ("workspace.write_stale_file", "workspace.patch_stale_file"), res.content
            conflicts += 1
        else:
            applied += 1
    rt.close()
    print(json.dumps({"applied": applied, "conflicts": conflicts}))
''')


def _seed(home: Path) -> Path:
    rt = tooldeck.open(home, records=False)
    inv = rt.invocation(run_id=RUN)
    [res] = inv.run([{"id": "s", "name": "workspace_write_file", "arguments": {"path": PATH, "content": "0"}}])
    assert not res.is_error, res.content
    root = inv.run_state.workspace_root
    rt.close()
    return root


@pytest.mark.parametrize("mode", ["write", "patch"])
def test_three_processes_lose_no_update(tmp_path: Path, mode: str) -> None:
    home = tmp_path / "home"
    root = _seed(home)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(home), mode, str(ROUNDS), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(PROCESSES)]
    time.sleep(0.2)
    go.touch()
    outcomes = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outcomes.append(json.loads(out.strip().splitlines()[-1]))
    applied = sum(o["applied"] for o in outcomes)
    assert sum(o["applied"] + o["conflicts"] for o in outcomes) == PROCESSES * ROUNDS
    assert int((root / PATH).read_text()) == applied  # every successful swap is in the file: none lost
    assert applied >= ROUNDS  # and there was progress, not only refusals
    print(mode, "applied/conflicts:", applied, sum(o["conflicts"] for o in outcomes))


HOLDER = textwrap.dedent('''
    import sys, time
    from tooldeck.workspace.store import WorkspaceStore
    store = WorkspaceStore(sys.argv[1])
    with store.locks.hold("output/counter.md"):
        print("held", flush=True)
        time.sleep(600)
''')


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    from tooldeck.workspace.store import ANY, WorkspaceStore

    root = _seed(tmp_path / "home")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = WorkspaceStore(root)
        loc = store.locate(store.policy(WorkspaceRoots()), PATH)
        landed = threading.Event()
        writer = threading.Thread(target=lambda: (store.swap(loc, ANY, lambda _old: b"1"), landed.set()))
        writer.start()
        assert not landed.wait(0.5)  # the swap waits for the other process's lock
        holder.send_signal(signal.SIGKILL)
        assert landed.wait(30)  # the OS released it with the process
        writer.join()
        assert (root / PATH).read_text() == "1"
    finally:
        holder.kill()
        holder.wait()


def test_lock_files_stay_hidden_and_go_with_removed_files(model: Model) -> None:
    from tooldeck.workspace.locks import LOCKS_DIR, lock_name

    model.ok("write_file", path="output/a.md", content="one")
    model.ok("write_file", path="output/a.md", content="two", mode="append")
    locks = model.root / LOCKS_DIR
    assert (locks / lock_name("output/a.md")).exists()
    assert (locks / ".gitignore").read_text() == "*\n"
    listing = model.ok("list_files", depth=4)
    assert ".tooldeck" not in listing.content and "lock" not in listing.content
    assert model.ok("search_files", pattern=lock_name("output/a.md")[:8]).structured["total"] == 0
    model.ok("remove_file", path="output/a.md")
    assert not (locks / lock_name("output/a.md")).exists()
    model.ok("restore_file", path="output/a.md")
    assert (model.root / "output" / "a.md").read_text() == "onetwo"
