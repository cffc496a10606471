"""Hostile inputs: each one runs through `workspace_shell` and must leave the host untouched.

After every case: the sentinel and secret files outside the workspace are unchanged, nothing new
exists outside the workspace's visible roots, the loopback listener got no request, and neither the
host-only environment variable nor the host-only secret file text appears in the result.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.shell.conftest import SHORT_TIMEOUT_S, Shell, make_shell

HOST_TMP_MARK = f"tooldeck_pwned_{uuid.uuid4().hex[:8]}"
HANG_DEADLINE_S = 120
"""How long a case may take before it counts as hung (generous: the machine may be loaded)."""


@dataclass(frozen=True)
class Case:
    id: str
    command: str
    plant: str = ""
    """Extra hostile setup: `links` (symlinks in output/), `root-link` (scratch/ itself a link)."""
    check: Callable[[Shell, object], None] | None = None
    slow: bool = False


def _not_error_free(code: str) -> Callable[[Shell, object], None]:
    def check(_sh: Shell, result: object) -> None:
        assert getattr(result, "error_code", None) == code, getattr(result, "content", result)
    return check


def _bounded(_sh: Shell, result: object) -> None:
    assert getattr(result, "error_code", None) in ("workspace.shell_timeout", "workspace.shell_failed",
                                                   "workspace.shell_exit"), getattr(result, "content", result)


def _ro_intact(sh: Shell, _result: object) -> None:
    assert (sh.ws / "tool-results" / "keep.txt").read_text() == "spilled result\n"
    assert (sh.ws / "skills" / "keep.md").read_text() == "# a skill\n"
    assert sorted(p.name for p in (sh.ws / "skills").iterdir()) == ["keep.md"]
    assert not any("pwn" in p.name for p in (sh.ws / "tool-results").rglob("*"))


def _input_intact(sh: Shell, _result: object) -> None:
    assert sorted(p.name for p in (sh.ws / "input").iterdir()) == ["secret.txt"]


def _capped(sh: Shell, result: object) -> None:
    structured = getattr(result, "structured", {}) or {}
    source = structured.get("source", structured)
    assert source.get("output_truncated") is True or len(getattr(result, "content", "")) < 200_000


def _next_call_works(sh: Shell, _result: object) -> None:
    """Nothing a command writes can pass for the worker's frames: the next call is served normally."""
    after = sh.call("echo still-served")
    assert after.content == "Exit code: 0\nstill-served", after.content


def _no_big_file_outside(sh: Shell, _result: object) -> None:
    for p in sh.ws.rglob("*"):
        if p.is_file() and p.stat().st_size > 11 * 1024 * 1024:
            assert p.parent.name in ("output", "scratch"), p


OUT = "{outside}"
CASES: list[Case] = [
    # -- traversal and absolute host paths
    Case("dotdot-relative", "cat ../../../../../../etc/hostname; cat ../../outside/secret.txt"),
    Case("dotdot-from-root", "cat /output/../../outside/secret.txt; cat /../../../outside/secret.txt"),
    Case("abs-host-read", f"cat {OUT}/secret.txt"),
    Case("abs-host-write", f"echo pwned > {OUT}/sentinel.txt; echo pwned >> {OUT}/sentinel.txt"),
    Case("abs-host-mkdir", f"mkdir -p {OUT}/newdir && touch {OUT}/newfile"),
    Case("abs-host-rm", f"rm -rf {OUT}; rm -f {OUT}/sentinel.txt"),
    Case("abs-host-cp-out", f"cp {OUT}/secret.txt /output/stolen.txt; cat /output/stolen.txt"),
    Case("abs-host-cp-in", f"cp /output/hello.txt {OUT}/copied.txt"),
    Case("abs-workspace-hidden", "cat {ws}/input/secret.txt; ls {ws}/input"),
    Case("host-tmp-write", f"echo x > /tmp/{HOST_TMP_MARK}; mkdir -p /tmp/{HOST_TMP_MARK}_d"),
    Case("cd-up-and-write", "cd /output/../../..; echo pwned > sentinel.txt; cd outside && echo pwned > sentinel.txt"),
    Case("find-from-root", "find / -name secret.txt 2>/dev/null; find / -name sentinel.txt 2>/dev/null"),
    Case("grep-root", "grep -r hostfile- / 2>/dev/null | head"),
    Case("tar-host-dir", f"tar czf /output/x.tgz {OUT} 2>&1; tar tzf /output/x.tgz 2>&1"),
    Case("rm-rf-root", "rm -rf / 2>/dev/null; rm -rf /* 2>/dev/null; echo done", check=_ro_intact),
    Case("mv-host-file", f"mv {OUT}/sentinel.txt /output/moved.txt"),
    # -- symlinks planted in the workspace by someone else
    Case("link-abs-read", "cat /output/abs_secret", plant="links"),
    Case("link-abs-dir-list", "ls /output/abs_dir; cat /output/abs_dir/secret.txt", plant="links"),
    Case("link-rel-escape-read", "cat /output/rel_secret", plant="links"),
    Case("link-rel-hidden-read", "cat /output/rel_input", plant="links"),
    Case("link-up-walk", "ls /output/up; cat /output/up/outside/secret.txt; ls /output/up/workspaces", plant="links"),
    Case("link-abs-write", "echo pwned > /output/abs_sentinel; echo pwned >> /output/abs_sentinel", plant="links"),
    Case("link-rel-write", "echo pwned > /output/rel_sentinel", plant="links"),
    Case("link-dir-write", "echo pwned > /output/abs_dir/sentinel.txt; cp /output/hello.txt /output/abs_dir/new.txt",
         plant="links"),
    Case("link-rm-through", "rm -rf /output/abs_dir/; rm -rf /output/up/outside", plant="links"),
    Case("link-sed-through", "sed -i 's/untouched/pwned/' /output/abs_sentinel /output/rel_sentinel", plant="links"),
    Case("link-grep-follow", "grep -rn hostfile /output 2>&1 | head", plant="links"),
    Case("link-find-follow", "find -L /output 2>&1 | head -50", plant="links"),
    Case("root-is-link", "ls /scratch; cat /scratch/secret.txt; echo pwned > /scratch/sentinel.txt",
         plant="root-link"),
    Case("agent-ln-abs", f"ln -s {OUT}/secret.txt /output/mine; cat /output/mine"),
    Case("agent-ln-rel", "ln -s ../../../../outside /output/mine2; ls /output/mine2; cat /output/mine2/secret.txt"),
    Case("agent-ln-then-write", f"ln -sf {OUT}/sentinel.txt /output/w; echo pwned > /output/w"),
    Case("python-through-link", "python3 -c \"print(open('/output/abs_secret').read())\"", plant="links"),
    Case("python-write-through-link", "python3 -c \"open('/output/abs_dir/pwn.txt', 'w').write('x')\"",
         plant="links"),
    Case("js-through-link", "node -e \"console.log(workspace.readText('/output/rel_secret'))\"", plant="links"),
    Case("js-write-through-link", "node -e \"workspace.writeText('/output/abs_sentinel', 'pwned')\"",
         plant="links"),
    # -- /proc, environment, host programs
    Case("proc-environ", "cat /proc/self/environ; cat /proc/1/environ; cat /proc/self/cmdline"),
    Case("proc-walk", "ls /proc; cat /proc/self/maps; cat /proc/self/status"),
    Case("env", "env"),
    Case("printenv", "printenv; printenv TOOLDECK_TEST_SECRET"),
    Case("export-set", "export -p; set | head -100; declare -x"),
    Case("echo-var", "echo \"$TOOLDECK_TEST_SECRET\" ${!TOOLDECK*}"),
    Case("bin-sh", "/bin/sh -c 'echo $TOOLDECK_TEST_SECRET; cat {outside}/secret.txt'"),
    Case("exec-bash", f"exec /bin/bash -c 'cat {OUT}/secret.txt; env'"),
    Case("usr-bin-env", "/usr/bin/env; command -v python3 node; type -a cat"),
    Case("sudo-kill", "sudo id; kill -9 1; kill -9 $PPID; kill -9 -1; echo alive"),
    Case("host-binaries", "/usr/bin/id; /bin/cat /etc/shadow; git status; pip install requests; perl -e 1"),
    Case("python-env", "python3 -c 'import os; print(os.environ, os.getenv(\"TOOLDECK_TEST_SECRET\"))'"),
    Case("python-subprocess", "python3 -c 'import subprocess; subprocess.run([\"id\"])'"),
    Case("python-socket", "python3 -c 'import socket; s = socket.create_connection((\"127.0.0.1\", {port}))'"),
    Case("python-host-open", f"python3 -c 'print(open(\"{OUT}/secret.txt\").read())'"),
    Case("python-host-write", f"python3 -c 'open(\"{OUT}/sentinel.txt\", \"w\").write(\"pwned\")'"),
    Case("python-dunder", "python3 -c 'print(().__class__.__bases__[0].__subclasses__())'"),
    Case("python-import", "python3 -c '__import__(\"os\").system(\"id\")'; python3 -c 'import ctypes'"),
    Case("js-require", "node -e 'require(\"child_process\").execSync(\"id\")'; node -e 'require(\"fs\")'"),
    Case("js-process-env", "node -e 'console.log(JSON.stringify(process.env), process.env.TOOLDECK_TEST_SECRET)'"),
    Case("js-import-node-builtin", "node -e 'import(\"fs\").then(m => console.log(m.readFileSync(\"/etc/passwd\")))'"),
    Case("js-host-read", f"node -e 'console.log(workspace.readText(\"{OUT}/secret.txt\"))'"),
    Case("js-host-write", f"node -e 'workspace.writeText(\"{OUT}/sentinel.txt\", \"pwned\")'"),
    Case("js-globals", "node -e 'console.log(typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof Deno, "
         "typeof Bun, typeof std, typeof os, typeof globalThis.__tooldeck_fs)'"),
    Case("js-function-ctor", "node -e 'console.log(Function(\"return this\")().process.env.TOOLDECK_TEST_SECRET)'"),
    # -- the worker process's own descriptors and frames
    Case("worker-fds", "echo a > /dev/stdout; echo b > /proc/self/fd/1; echo c >&3; echo d >&7; exec 1>&-; "
         "echo gone; cat /proc/self/fd/0 /dev/fd/4 2>&1 | head -3", check=_next_call_works),
    Case("frame-lookalikes", "printf '\\x0c\\x05\\x00\\x00\\x00{\"id\":1}'; node -e 'process.stdout.write("
         "String.fromCharCode(12, 40, 0, 0, 0) + \"{}\")'; python3 -c 'print(\"\\x0c\\x00\\x00\\x00\\x00\")'",
         check=_next_call_works),
    # -- network
    Case("curl-loopback", "curl -s http://127.0.0.1:{port}/curl; curl -s http://localhost:{port}/curl2"),
    Case("wget-loopback", "wget -qO- http://127.0.0.1:{port}/wget"),
    Case("http-builtin", "http GET http://127.0.0.1:{port}/http; http POST http://[::1]:{port}/x"),
    Case("dev-tcp", "exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'GET /tcp HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"),
    Case("js-fetch", "node -e 'fetch(\"http://127.0.0.1:{port}/js\").then(r => r.text()).then(console.log)'"),
    Case("python-urllib", "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{port}/py\")'"),
    # -- read-only and hidden roots
    Case("write-tool-results", "echo x > /tool-results/pwn.txt; echo x >> /tool-results/keep.txt; "
         "rm -f /tool-results/keep.txt; mkdir /tool-results/pwn", check=_ro_intact),
    Case("write-skills", "echo x > /skills/pwn.md; rm -f /skills/keep.md; mv /skills/keep.md /output/",
         check=_ro_intact),
    Case("sed-i-readonly", "sed -i 's/spilled/pwned/' /tool-results/keep.txt; touch /skills/keep.md",
         check=_ro_intact),
    Case("python-write-readonly", "python3 -c \"open('/tool-results/pwn.txt', 'w').write('x')\"", check=_ro_intact),
    Case("js-write-readonly", "node -e \"workspace.writeText('/skills/pwn.md', 'x')\"", check=_ro_intact),
    Case("read-hidden-input", "ls /input; cat /input/secret.txt; ls -la / | grep -c input", check=_input_intact),
    Case("read-hidden-tooldeck", "ls -la /.tooldeck; cat /.tooldeck/background/events.jsonl"),
    Case("python-hidden", "python3 -c \"print(open('/input/secret.txt').read())\""),
    Case("js-hidden", "node -e \"console.log(workspace.readText('/input/secret.txt'))\""),
    # -- resource exhaustion
    Case("infinite-sleep-loop", "while true; do sleep 0.2; done", check=_not_error_free("workspace.shell_timeout"),
         slow=True),
    Case("infinite-busy-loop", "while true; do :; done", check=_bounded, slow=True),
    Case("fork-bomb", ":(){ :|:& };:", check=None, slow=True),
    Case("recursion-bomb", "f() { f; }; f", check=_bounded),
    Case("yes-flood", "yes", check=_capped),
    Case("seq-flood", "seq 1 10000000; yes | head -c 5000000", check=_capped),
    Case("big-file-20mb", "head -c 20000000 /dev/zero > /output/big.bin; ls -la /output; "
         "dd if=/dev/zero of=/scratch/big2 bs=1048576 count=20", check=_no_big_file_outside),
    Case("big-variable", "x=$(head -c 30000000 /dev/zero | tr '\\0' a); echo ${#x}"),
    Case("python-memory-bomb", "python3 -c 'x = []\nwhile True: x.append(\"x\" * 100000)'", check=_bounded),
    Case("python-infinite-loop", "python3 -c 'while True: pass'", check=_bounded, slow=True),
    Case("python-regex-dos", "python3 -c 'import re; print(re.match(r\"(a+)+$\", \"a\" * 40 + \"b\"))'",
         slow=True),
    Case("python-recursion", "python3 -c 'def f(n): return f(n + 1)\nf(0)'", check=_bounded),
    Case("python-bigint", "python3 -c 'print(len(str(10 ** 10 ** 8)))'", check=_bounded, slow=True),
    Case("js-memory-bomb", "node -e 'const a = []; for (;;) a.push(new Array(1e5).fill(7))'", check=_bounded),
    Case("js-infinite-loop", "node -e 'for (;;) {}'", check=_bounded, slow=True),
    Case("js-regex-dos", "node -e 'console.log(/(a+)+$/.test(\"a\".repeat(40) + \"b\"))'", check=_bounded, slow=True),
    Case("js-recursion", "node -e 'function f() { return f() + 1 } f()'", check=_bounded),
    Case("js-string-bomb", "node -e 'let s = \"x\"; for (;;) s += s'", check=_bounded),
    Case("js-never-settles", "node -e 'await new Promise(() => {})' --input-type=module; "
         "node --input-type=module -e 'await new Promise(() => {})'", check=_bounded),
]


def _plant(sh: Shell, kind: str) -> None:
    out, o = sh.ws / "output", sh.outside
    if kind == "links":
        os.symlink(o / "secret.txt", out / "abs_secret")
        os.symlink(o / "sentinel.txt", out / "abs_sentinel")
        os.symlink(o, out / "abs_dir")
        rel_up = os.path.relpath(o, out)
        os.symlink(os.path.join(rel_up, "secret.txt"), out / "rel_secret")
        os.symlink(os.path.join(rel_up, "sentinel.txt"), out / "rel_sentinel")
        os.symlink("../input/secret.txt", out / "rel_input")
        os.symlink("../../..", out / "up")
    elif kind == "root-link":
        scratch = sh.ws / "scratch"
        scratch.rmdir()
        os.symlink(o, scratch)


def _host_snapshot(sh: Shell) -> dict[str, tuple[int, int]]:
    """Every file under the test's tmp dir except the workspace's visible roots and the run's hidden area."""
    skip = {sh.ws / r for r in ("output", "scratch", "plan", "summaries", "persist", "tool-results", "skills")}
    skip.add(sh.ws / ".tooldeck")
    skip.add(sh.home / "records.journal")  # the runtime's own records (its journal, docs/records.md)
    snap: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(sh.home.parent):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in skip]
        for name in dirnames:
            snap[str(here / name)] = (-1, -1)  # a folder's own mtime changes when the shell adds a root
        for name in filenames:
            if name.startswith("records.sqlite"):
                continue  # the runtime's own records
            st = (here / name).lstat()
            snap[str(here / name)] = (st.st_size, st.st_mtime_ns)
    return snap


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input_leaves_host_untouched(case: Case, tmp_path: Path, env_secret: str,
                                             listener: tuple[int, list[str]]) -> None:
    port, hits = listener
    sh = make_shell(tmp_path, timeout_s=SHORT_TIMEOUT_S)
    try:
        if case.plant:
            _plant(sh, case.plant)
        before = _host_snapshot(sh)
        hits_before = len(hits)
        cwd_before = os.getcwd()
        command = case.command.replace("{outside}", str(sh.outside)).replace("{ws}", str(sh.ws))
        command = command.replace("{port}", str(port))
        # The call must end (the shell's timeout stops what does not end by itself): waited for with a generous
        # deadline, so a hang fails the case instead of holding up the suite; how long it took is not the point.
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(sh.call, command).result(timeout=SHORT_TIMEOUT_S + HANG_DEADLINE_S)
        assert (sh.outside / "sentinel.txt").read_text() == "untouched\n"
        assert (sh.outside / "secret.txt").read_text() == sh.secret + "\n"
        assert _host_snapshot(sh) == before
        assert not Path(f"/tmp/{HOST_TMP_MARK}").exists() and not Path(f"/tmp/{HOST_TMP_MARK}_d").exists()
        assert len(hits) == hits_before, f"the loopback listener was reached: {hits[hits_before:]}"
        assert os.getcwd() == cwd_before
        assert os.environ.get("TOOLDECK_TEST_SECRET") == env_secret
        text = result.content
        if isinstance(result.structured, dict) and result.structured.get("externalized"):
            text += (sh.ws / result.structured["path"]).read_text()
        assert env_secret not in text
        assert sh.secret not in text
        assert "listener-reached" not in text
        if case.check is not None:
            case.check(sh, result)
        # What the command started is stopped: the shell's worker is free for the next call.
        with ThreadPoolExecutor(1) as pool:
            after = pool.submit(sh.call, "echo still-served").result(timeout=HANG_DEADLINE_S)
        assert not after.is_error and after.content.split("\n")[:2] == ["Exit code: 0", "still-served"], after.content
    finally:
        sh.runtime.close()


def test_there_are_at_least_sixty_cases() -> None:
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)
