"""`<home>/subagents/sessions.json` and the sessions' conversations shared by two processes: both create
named sessions and update one shared session at the same time, and nothing is lost (each change is a
read-modify-write under the home's lock)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tooldeck.agent.delegation.sessions import Sessions

ROUNDS = 40
WORKER = """
import sys, time
from pathlib import Path
from tooldeck.agent.delegation.sessions import Sessions

home, tag, rounds, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
(home / f"ready-{tag}").touch()
while not go.exists():
    time.sleep(0.001)
store = Sessions(home)
for i in range(rounds):
    store.choose(f"{tag}-{i}", None, f"role of {tag}-{i}", "m")          # a new named session
    shared = store.choose("shared", None, "the shared role", "m")          # the same one, from both
    store.remember(shared.id, f"{tag} task {i}", f"{tag} answer {i}", new=False, run_id=f"run-{tag}-{i}", model="m")
"""


def test_two_processes_lose_no_session_and_no_exchange(tmp_path: Path) -> None:
    go = tmp_path / "go"
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), tag, str(ROUNDS), str(go)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for tag in ("a", "b")]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{tag}").exists() for tag in ("a", "b")):
        assert time.monotonic() < deadline and all(w.poll() is None for w in workers), \
            [w.communicate() for w in workers if w.poll() is not None]
        time.sleep(0.01)
    go.touch()  # both start together
    for w in workers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err.decode()

    store = Sessions(tmp_path)
    sessions = store.list()
    names = sorted(s.name for s in sessions)
    assert names == sorted(["shared", *(f"{t}-{i}" for t in "ab" for i in range(ROUNDS))])
    [shared] = [s for s in sessions if s.name == "shared"]
    assert shared.legs == 2 * ROUNDS
    assert all(s.role == f"role of {s.name}" for s in sessions if s.name != "shared")
    past = store.history(shared.id, limit=10 * ROUNDS)
    assert len(past) == 2 * ROUNDS
    for tag in "ab":  # every exchange of each process, whole and in its order
        assert [t for t, _ in past if t.startswith(f"{tag} ")] == [f"{tag} task {i}" for i in range(ROUNDS)]
        assert [a for a in (a for _, a in past) if a.startswith(f"{tag} ")] == \
            [f"{tag} answer {i}" for i in range(ROUNDS)]
