"""The agent command matrix (sandbox-and-mcp-dependencies.md §3) through `workspace_shell`."""

from __future__ import annotations

import json

import pytest

from tests.shell.conftest import Shell

MATRIX: list[tuple[str, str, str]] = [
    # (id, command, expected substring of stdout)
    ("pipes", "printf 'b\\na\\nb\\nc\\nb\\n' | sort | uniq -c | sort -rn | head -1", "3 b"),
    ("heredoc-quoted", "cat <<'EOF'\n$HOME stays\nEOF", "$HOME stays"),
    ("heredoc-expanding", "X=42; cat <<EOF\nx is $X\nEOF", "x is 42"),
    ("sed-in-place", "printf 'foo bar\\n' > output/s.txt && sed -i 's/foo/baz/' output/s.txt && cat output/s.txt",
     "baz bar"),
    ("jq", "echo '{\"a\": {\"b\": [1, 2, 3]}}' | jq -c '.a.b | map(. * 2)'", "[2,4,6]"),
    ("jq-raw", "echo '[{\"n\": \"x\"}, {\"n\": \"y\"}]' > output/d.json && jq -r '.[].n' output/d.json | paste -sd,",
     "x,y"),
    ("find-xargs", "mkdir -p output/src && printf 'a\\nb\\n' > output/src/one.py && printf 'c\\n' > output/src/two.py"
     " && find output -name '*.py' | sort | xargs wc -l | tail -1", "3 total"),
    ("grep-rn", "grep -rn world output", "output/hello.txt:1:hello world"),
    ("redirects", "echo one > output/r.txt; echo two >> output/r.txt; wc -l < output/r.txt; cat nope 2> output/e.txt;"
     " cat output/e.txt | grep -c 'No such'", "2\n1"),
    ("stderr-merge", "{ echo out; echo err >&2; } 2>&1 | sort | paste -sd+", "err+out"),
    ("cd-and-relative", "mkdir -p output/a && cd output/a && echo deep > f.txt && cat ../a/f.txt", "deep"),
    ("set-e-pipefail", "set -euo pipefail; false | true; echo unreachable", ""),
    ("functions-arrays", "f() { local -a xs=(3 1 2); printf '%s\\n' \"${xs[@]}\" | sort -n | paste -sd' '; }; f",
     "1 2 3"),
    ("arithmetic-regex", "x=$(( 6 * 7 )); [[ 'ab12' =~ ([0-9]+) ]] && echo $x ${BASH_REMATCH[1]}", "42 12"),
    ("awk", "printf '1 2\\n3 4\\n' | awk '{s += $1 * $2} END {print s}'", "14"),
    ("diff-patch", "printf 'a\\nb\\n' > output/x && printf 'a\\nc\\n' > output/y && diff -u output/x output/y > "
     "output/p.diff; patch output/x < output/p.diff >/dev/null && cat output/x | tail -1", "c"),
    ("tar-gzip", "tar czf output/t.tgz -C output hello.txt && tar tzf output/t.tgz", "hello.txt"),
    ("python-re-json", "python3 -c 'import re, json; print(json.dumps(re.findall(r\"\\d+\", \"a1b22c333\")))'",
     '["1", "22", "333"]'),
    ("python-data", "python3 - <<'EOF'\nimport collections, itertools, math, datetime\nfrom dataclasses import "
     "dataclass\n@dataclass\nclass Row:\n    k: str\n    v: int\nrows = [Row('a', 1), Row('b', 2), Row('a', 3)]\n"
     "c = collections.Counter(r.k for r in rows)\nprint(c['a'], list(itertools.accumulate([1, 2, 3])), "
     "math.isqrt(17), datetime.date(2024, 2, 29).isoformat())\nEOF", "2 [1, 3, 6] 4 2024-02-29"),
    ("python-files", "printf '{\"n\": [1,2,3]}' > output/in.json && python3 -c 'import json\nd = json.load(open("
     "\"output/in.json\"))\nopen(\"output/sum.txt\", \"w\").write(str(sum(d[\"n\"])))' && cat output/sum.txt", "6"),
    ("python-script-argv", "printf 'print(argv[1:])\\n' > output/s.py && cd output && python3 s.py a b", "['a', 'b']"),
    ("node-map-regex", "node -e 'const m = new Map([[\"k\", 1]]); const r = /(\\w+)@(\\w+)/.exec(\"me@host\"); "
     "console.log(m.get(\"k\"), r[2], [...\"a-b\".matchAll(/\\w/g)].length)'", "1 host 2"),
    ("node-class-promise-json", "node -e 'class A { #x = 1; get x() { return this.#x } } "
     "Promise.resolve(new A().x).then(v => console.log(JSON.stringify({v})))'", '{"v":1}'),
    ("node-es-module", "mkdir -p output/lib && printf 'export const twice = (x) => x * 2;\\n' > output/lib/math.js && "
     "printf \"import { twice } from './lib/math.js';\\nconsole.log(twice(21), process.argv.slice(2).join(','));\\n\" "
     "> output/main.mjs && node output/main.mjs p q", "42 p,q"),
    ("node-workspace-api", "js -e 'workspace.writeText(\"output/js/o.txt\", \"from js\"); "
     "console.log(workspace.readText(\"output/js/o.txt\"), workspace.exists(\"output/nope\"))' && cat output/js/o.txt",
     "from js false\nfrom js"),
    ("node-stdin-pipe", "echo 'console.log(6 * 7)' | node", "42"),
]


@pytest.mark.parametrize(("command", "expected"), [(c, e) for _, c, e in MATRIX], ids=[i for i, _, _ in MATRIX])
def test_agent_matrix(shell: Shell, command: str, expected: str) -> None:
    result = shell.call(command)
    if expected == "":
        assert result.error_code == "workspace.shell_exit", result.content
        assert "unreachable" not in result.content
        return
    assert not result.is_error, result.content
    assert result.content.startswith("Exit code: 0\n")
    assert expected in result.content


def test_redirect_into_output_lands_on_the_host(shell: Shell) -> None:
    shell.call("mkdir -p output/reports && seq 1 5 > output/reports/n.txt")
    assert (shell.ws / "output" / "reports" / "n.txt").read_text() == "1\n2\n3\n4\n5\n"


def test_files_persist_but_shell_state_does_not(shell: Shell) -> None:
    shell.call("export KEEP=1; f() { echo fn; }; cd output; echo saved > kept.txt")
    result = shell.call("echo \"var=${KEEP:-unset}\"; pwd; type f >/dev/null 2>&1 || echo no-fn; cat output/kept.txt")
    assert "var=unset" in result.content
    assert "\n/\n" in result.content
    assert "no-fn" in result.content
    assert "saved" in result.content


def test_workdir_starts_there_and_rejects_hidden_or_missing(shell: Shell) -> None:
    assert "/output" in shell.call("pwd", workdir="output").content
    assert "/output" in shell.call("pwd", workdir="/output/").content
    assert shell.call("pwd", workdir="input").error_code == "workspace.path_not_visible"
    assert shell.call("pwd", workdir="../x").error_code == "workspace.invalid_path"
    missing = shell.call("pwd", workdir="output/missing")
    assert missing.error_code == "workspace.shell_failed"
    assert "not a folder" in missing.content


def test_only_command_and_workdir_are_accepted(shell: Shell) -> None:
    assert shell.call("echo hi", timeout=5).error_code == "tool.invalid_arguments"


def test_result_shape_exit_stdout_stderr(shell: Shell) -> None:
    result = shell.call("echo out; echo err >&2; exit 3")
    assert result.content == "Exit code: 3\nout\nstderr:\nerr"
    assert result.error_code == "workspace.shell_exit"
    assert result.structured == {"exit_code": 3, "output_truncated": False}
    only_err = shell.call("echo err >&2")
    assert only_err.content == "Exit code: 0\nerr"


def test_python_and_js_report_errors_with_exit_codes(shell: Shell) -> None:
    py = shell.call("python3 -c '1/0'")
    assert py.error_code == "workspace.shell_exit" and "ZeroDivisionError" in py.content
    js = shell.call("node -e 'throw new TypeError(\"bad\")'")
    assert js.error_code == "workspace.shell_exit" and "TypeError: bad" in js.content
    assert shell.call("node -e 'process.exitCode = 7'").structured["exit_code"] == 7
    assert shell.call("node -e 'process.exit(5); console.log(\"no\")'").structured["exit_code"] == 5
    assert shell.call("python3 -c 'import sys; exit(4)'").structured["exit_code"] == 4


def test_js_missing_module_message_says_what_is_importable(shell: Shell) -> None:
    result = shell.call("printf \"import x from 'lodash';\\n\" > output/m.mjs && node output/m.mjs")
    assert "only workspace files" in result.content and "npm" in result.content
    rel = shell.call("printf \"import x from './nope.js';\\n\" > output/n.mjs && node output/n.mjs")
    assert "no such file in the workspace" in rel.content


def test_js_runtime_module_import(shell: Shell) -> None:
    src = "import { workspace } from '@tooldeck/runtime';\\nconsole.log(workspace.readText('output/hello.txt'));\\n"
    result = shell.call(f"printf \"{src}\" > output/rt.mjs && node output/rt.mjs")
    assert "hello world" in result.content, result.content


def test_writes_before_a_failure_stay(shell: Shell) -> None:
    result = shell.call("echo kept > output/before.txt; exit 9")
    assert result.error_code == "workspace.shell_exit"
    assert (shell.ws / "output" / "before.txt").read_text() == "kept\n"


def test_writes_before_a_timeout_stay(shell: Shell) -> None:
    result = shell.call("echo kept > output/t.txt; sleep 10")
    assert result.error_code == "workspace.shell_timeout"
    assert result.content.startswith("Command timed out.")
    assert result.structured == {"exit_code": None, "output_truncated": False}
    assert (shell.ws / "output" / "t.txt").read_text() == "kept\n"


def test_output_is_capped_and_marked(shell: Shell) -> None:
    result = shell.call("seq 1 90000")
    # over the Profile's inline limit the projection spills the text to tool-results/ and keeps the source
    assert result.structured["externalized"] is True
    assert result.structured["source"] == {"exit_code": 0, "output_truncated": True}
    text = (shell.ws / result.structured["path"]).read_text()
    assert text.startswith("Exit code: 0\n1\n2\n")
    assert text.rstrip().endswith("Output truncated.")
    assert len(text.encode()) < 128 * 1024 + 200


def test_stdout_and_stderr_are_capped_separately(shell: Shell) -> None:
    result = shell.call("seq 1 40000 >&2; echo tail-out")
    source = result.structured.get("source", result.structured)
    assert source["output_truncated"] is True
    text = (shell.ws / result.structured["path"]).read_text() if result.structured.get("externalized") else \
        result.content
    assert "tail-out\nstderr:\n1\n2\n" in text


def test_command_over_128_kib_is_refused(shell: Shell) -> None:
    result = shell.call("echo " + "x" * (128 * 1024 + 10))
    assert result.error_code == "tool.invalid_arguments"


def test_shell_edit_makes_a_later_write_stale(shell: Shell) -> None:
    read = shell.tool("workspace_read_file", path="output/hello.txt")
    assert not read.is_error, read.content
    shell.call("echo changed-by-shell > output/hello.txt")
    write = shell.tool("workspace_write_file", path="output/hello.txt", content="overwrite\n")
    assert write.error_code == "workspace.write_stale_file", write.content
    assert (shell.ws / "output" / "hello.txt").read_text() == "changed-by-shell\n"
    shell.tool("workspace_read_file", path="output/hello.txt")
    again = shell.tool("workspace_write_file", path="output/hello.txt", content="overwrite\n")
    assert not again.is_error, again.content


def test_structured_result_is_json(shell: Shell) -> None:
    """The structured result is plain JSON with the command's real exit code, on success and on failure."""
    ok = shell.call("echo hi")
    assert not ok.is_error and ok.content.endswith("hi")
    assert json.loads(json.dumps(ok.structured)) == ok.structured == {"exit_code": 0, "output_truncated": False}
    failed = shell.call("echo out; echo err >&2; exit 7")
    assert failed.error_code == "workspace.shell_exit" and "out" in failed.content and "stderr:\nerr" in failed.content
    assert json.loads(json.dumps(failed.structured)) == failed.structured == {"exit_code": 7, "output_truncated": False}
