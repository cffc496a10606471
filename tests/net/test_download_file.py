"""`download_file` through a real Runtime (records on) against a loopback server: the file and its
sha256, the default and bare names, refusals that write nothing, and the size cap stopping the read."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.builtins import net_download


@pytest.fixture
def server() -> Any:
    with loopback_server() as s:
        yield s


def _download(make_runtime: MakeRuntime, args: dict[str, Any], **keys: Any) -> tuple[Any, Path]:
    keys.setdefault("net_allow", ["127.0.0.1"])
    rt = make_runtime(loading="eager", allow=["builtin:download_file"], **keys)
    inv = rt.invocation()
    [result] = inv.run([{"id": "d1", "name": "download_file", "arguments": args}])
    return result, inv.run_state.workspace_root


def test_downloads_into_the_workspace_with_size_and_sha256(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    payload = bytes(range(256)) * 100
    server.answers["/files/data%20set.bin"] = Answer(200, payload, {"content-type": "application/octet-stream"})
    result, root = _download(make_runtime, {"url": f"{server.url}/files/data%20set.bin"})
    assert not result.is_error, result.content
    answer = json.loads(result.content)
    assert answer["output_file"] == "output/data set.bin" and answer["size_bytes"] == len(payload)
    assert answer["sha256"] == hashlib.sha256(payload).hexdigest() and answer["status_code"] == 200
    assert (root / "output" / "data set.bin").read_bytes() == payload


def test_a_bare_name_goes_into_output_and_a_path_is_kept(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    server.answers["/x"] = Answer(200, b"x")
    result, root = _download(make_runtime, {"url": f"{server.url}/x", "output_file": "x.txt"}, home="a")
    assert json.loads(result.content)["output_file"] == "output/x.txt" and (root / "output/x.txt").exists()
    result, root = _download(make_runtime, {"url": f"{server.url}/x", "output_file": "scratch/deep/x.txt"}, home="b")
    assert not result.is_error, result.content
    assert (root / "scratch/deep/x.txt").read_bytes() == b"x"


def test_refusals_write_nothing(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    server.answers["/missing"] = Answer(404, b"no such file " * 2000)
    result, root = _download(make_runtime, {"url": f"{server.url}/missing"}, home="status")
    assert result.is_error and result.error_code == "http.status" and result.content.startswith("http 404: no such")
    assert len(result.content) < 8 * 1024 + 200
    assert not (root / "output" / "missing").exists()
    result, root = _download(make_runtime, {"url": f"{server.url}/x"}, home="guard", net_allow=[])
    assert result.is_error and result.error_code == "net.refused"
    result, root = _download(make_runtime, {"url": f"{server.url}/x", "output_file": "tool-results/x"}, home="ro")
    assert result.is_error and result.error_code.startswith("workspace.")
    assert [r.path for r in server.requests] == ["/missing"]


def test_an_existing_file_is_not_overwritten(make_runtime: MakeRuntime, server: LoopbackServer) -> None:
    server.answers["/x"] = Answer(200, b"new")
    rt = make_runtime(loading="eager", allow=["builtin:download_file"], net_allow=["127.0.0.1"])
    inv = rt.invocation()
    (inv.run_state.workspace_root / "output").mkdir(parents=True, exist_ok=True)
    (inv.run_state.workspace_root / "output" / "x").write_bytes(b"old")
    [result] = inv.run([{"id": "d", "name": "download_file", "arguments": {"url": f"{server.url}/x"}}])
    assert result.is_error and result.error_code == "http.file_exists"
    assert (inv.run_state.workspace_root / "output" / "x").read_bytes() == b"old" and server.requests == []


def test_the_size_cap_stops_the_download(make_runtime: MakeRuntime, server: LoopbackServer,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(net_download, "MAX_FILE_BYTES", 64 * 1024)  # the 64 MiB limit, scaled down
    server.answers["/big"] = Answer(200, b"y" * (4 * 1024 * 1024))
    result, root = _download(make_runtime, {"url": f"{server.url}/big"})
    assert result.is_error and result.error_code == "http.too_large"
    assert not (root / "output" / "big").exists()
    deadline = time.monotonic() + 10  # the client hung up instead of reading the rest
    while server.closed < server.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.closed == server.connections == 1


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("ab./\\~ -_%:\x00é")), min_size=1, max_size=20))
def test_any_output_file_lands_inside_the_workspace_or_is_refused(make_runtime: MakeRuntime, server: LoopbackServer,
                                                                 tmp_path: Path, name: str) -> None:
    server.answers["/f"] = Answer(200, b"data")
    result, root = _download(make_runtime, {"url": f"{server.url}/f", "output_file": name}, home="fuzz")
    if result.is_error:
        assert result.error_code and "." in result.error_code, result.content
    else:  # the answer shows the name escaped (`\\u{20}` for a space): look for the bytes on disk instead
        written = [p for p in root.rglob("*") if p.is_file() and ".tooldeck" not in p.parts]
        assert len(written) == 1 and written[0].read_bytes() == b"data"
        assert written[0].resolve().is_relative_to(root.resolve())
        written[0].unlink()
