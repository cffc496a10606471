"""`generate_image` / `generate_audio` through a real Runtime against a loopback server speaking the OpenAI
images and speech endpoints: offered only when `[models]` names a model for the job, the request shapes
(JSON, multipart edits, bearer key from the secrets store), the file saved under output/ and never
overwritten, every error code, the key kept out of results and records, the time limit."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MakeRuntime
from tests.net.support import Answer, LoopbackServer, loopback_server
from tooldeck.builtins import media
from tooldeck.secrets import SecretStore

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))
OGG = b"OggS\x00\x02" + bytes(200)
KEY = "sk-media-key-never-shown-0042"


@pytest.fixture
def server() -> Any:
    with loopback_server() as s:
        yield s


def _home(tmp_path: Path, server: LoopbackServer, *, image: bool = True, tts: bool = True,
          provider: str = "openai") -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    roles = ("image = \"pics\"\n" if image else "") + ("tts = \"voice\"\n" if tts else "")
    (home / "tooldeck.toml").write_text(
        f"[models]\n{roles}\n"
        f"[models.pics]\nprovider = \"{provider}\"\nmodel = \"gpt-image-1\"\nbase_url = \"{server.url}/v1\"\n"
        "api_key = \"${secret:IMG_KEY}\"\n"
        f"[models.voice]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini-tts\"\nbase_url = \"{server.url}/v1\"\n"
        "api_key = \"${secret:IMG_KEY}\"\nheaders = { x-team = \"qa\" }\n")
    SecretStore().set("IMG_KEY", KEY)
    return home


def _run(make_runtime: MakeRuntime, home: Path, name: str, args: dict[str, Any], **keys: Any) -> tuple[Any, Path]:
    keys.setdefault("net_allow", ["127.0.0.1"])
    rt = make_runtime(home=home, loading="eager", allow=["builtin:generate_image", "builtin:generate_audio"],
                      **keys)
    inv = rt.invocation()
    [result] = inv.run([{"id": "m1", "name": name, "arguments": args}])
    return result, inv.run_state.workspace_root


def _names(make_runtime: MakeRuntime, home: Path) -> list[str]:
    rt = make_runtime(home=home, loading="eager", allow=["builtin:generate_image", "builtin:generate_audio"])
    return [t["function"]["name"] for t in rt.invocation().tools()]


def test_offered_only_when_a_model_is_named_for_the_job(make_runtime: MakeRuntime, tmp_path: Path,
                                                        server: LoopbackServer) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert _names(make_runtime, home) == []
    _home(tmp_path, server, tts=False)
    assert _names(make_runtime, home) == ["generate_image"]
    result, _ = _run(make_runtime, home, "generate_audio", {"text": "hi"})
    assert result.error_code == "tool.unknown_tool" and server.requests == []
    _home(tmp_path, server)
    assert _names(make_runtime, home) == ["generate_image", "generate_audio"]


def test_an_image_is_generated_and_saved(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    answer = json.dumps({"created": 1, "data": [{"b64_json": base64.b64encode(PNG).decode()}]}).encode()
    server.answers["/v1/images/generations"] = Answer(200, answer, {"content-type": "application/json"})
    result, root = _run(make_runtime, home, "generate_image",
                        {"prompt": "a red fox", "size": "1024x1024", "output_file": "../../art/fox.jpg"})
    assert not result.is_error, result.content
    saved = json.loads(result.content)
    assert saved == {"ok": True, "path": "output/fox.png", "size_bytes": len(PNG), "format": "png",
                     "model": "gpt-image-1"}
    assert (root / "output" / "fox.png").read_bytes() == PNG
    [seen] = server.requests
    assert seen.method == "POST" and seen.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(seen.body) == {"model": "gpt-image-1", "prompt": "a red fox", "n": 1, "size": "1024x1024"}
    rt = make_runtime(home=home, loading="eager", allow=["builtin:generate_image"], net_allow=["127.0.0.1"])
    inv = rt.invocation()
    for expected in ("output/fox.png", "output/fox-2.png"):  # the first file is kept
        [again] = inv.run([{"id": "g", "name": "generate_image", "arguments": {"prompt": "fox", "output_file": "fox"}}])
        assert json.loads(again.content)["path"] == expected
    assert KEY.encode() not in b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())


def test_an_image_by_url_and_an_edit(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    server.answers["/v1/images/generations"] = Answer(200, json.dumps({"data": [{"url": f"{server.url}/img/1"}]})
                                                      .encode())
    server.answers["/img/1"] = Answer(200, PNG, {"content-type": "image/png"})
    result, root = _run(make_runtime, home, "generate_image", {"prompt": "p"})
    assert not result.is_error, result.content
    path = json.loads(result.content)["path"]
    assert path.startswith("output/image-") and (root / path).read_bytes() == PNG
    rt = make_runtime(home=home, loading="eager", allow=["builtin:generate_image"], net_allow=["127.0.0.1"])
    inv = rt.invocation()
    (inv.run_state.workspace_root / "scratch").mkdir(exist_ok=True)
    (inv.run_state.workspace_root / "scratch" / "ref.png").write_bytes(PNG)
    server.answers["/v1/images/edits"] = Answer(200, json.dumps({"data": [{"b64_json": base64.b64encode(PNG)
                                                                          .decode()}]}).encode())
    [result] = inv.run([{"id": "e", "name": "generate_image",
                         "arguments": {"prompt": "make it blue", "reference_image": "scratch/ref.png"}}])
    assert not result.is_error, result.content
    edit = server.requests[-1]
    assert edit.path == "/v1/images/edits" and edit.headers["content-type"].startswith("multipart/form-data")
    assert b'name="prompt"' in edit.body and b"make it blue" in edit.body and PNG in edit.body
    assert b'name="image"; filename="ref.png"' in edit.body


def test_speech_is_saved_with_the_extension_of_its_type(make_runtime: MakeRuntime, tmp_path: Path,
                                                        server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    server.answers["/v1/audio/speech"] = Answer(200, OGG, {"content-type": "audio/ogg"})
    result, root = _run(make_runtime, home, "generate_audio", {"text": "Hello there.", "voice": "nova",
                                                               "output_file": "greetings/hello.wav"})
    assert not result.is_error, result.content
    assert json.loads(result.content)["path"] == "output/hello.ogg"
    assert (root / "output" / "hello.ogg").read_bytes() == OGG
    [seen] = server.requests
    assert json.loads(seen.body) == {"model": "gpt-4o-mini-tts", "input": "Hello there.", "voice": "nova",
                                     "response_format": "opus"}
    assert seen.headers["x-team"] == "qa" and seen.headers["authorization"] == f"Bearer {KEY}"
    server.answers["/v1/audio/speech"] = Answer(200, b"RIFF....WAVE", {"content-type": "application/octet-stream"})
    result, _ = _run(make_runtime, home, "generate_audio", {"text": "x"})
    assert json.loads(result.content)["format"] == "wav" and json.loads(result.content)["voice"] == "alloy"


def test_every_error_saves_nothing(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer) -> None:
    home = _home(tmp_path, server)
    roots: list[Path] = []

    def run(name: str, args: dict[str, Any], **keys: Any) -> Any:
        result, root = _run(make_runtime, home, name, args, **keys)
        roots.append(root)
        assert result.is_error and KEY not in result.content
        return result

    server.answers["/v1/images/generations"] = Answer(400, b'{"error": {"message": "Your prompt was rejected."}}')
    result = run("generate_image", {"prompt": "p"})
    assert result.error_code == "media.failed" and "http 400: Your prompt was rejected." in result.content
    server.answers["/v1/images/generations"] = Answer(200, b'{"data": []}')
    assert run("generate_image", {"prompt": "p"}).error_code == "media.bad_answer"
    server.answers["/v1/images/generations"] = Answer(200, json.dumps({"data": [{"b64_json": "aGVsbG8="}]}).encode())
    result = run("generate_image", {"prompt": "p"})
    assert result.error_code == "media.bad_answer" and "not PNG" in result.content
    assert run("generate_image", {"prompt": "p", "reference_image": "output/none.png"}).error_code == \
        "media.bad_reference"
    assert run("generate_image", {"prompt": "p"}, net_allow=[]).error_code == "net.refused"
    server.answers["/v1/audio/speech"] = Answer(200, b"", {"content-type": "audio/ogg"})
    assert run("generate_audio", {"text": "x"}).error_code == "media.bad_answer"
    assert run("generate_audio", {"text": "   "}).error_code == "media.failed"
    assert [p for root in roots for p in root.rglob("*") if p.is_file() and "output" in p.parts] == []


def test_taken_names_are_passed_over_and_none_free_is_an_error(make_runtime: MakeRuntime, tmp_path: Path,
                                                               server: LoopbackServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tooldeck.builtins import media_files

    home = _home(tmp_path, server)
    server.answers["/v1/audio/speech"] = Answer(200, OGG, {"content-type": "audio/ogg"})
    rt = make_runtime(home=home, loading="eager", allow=["builtin:generate_audio"], net_allow=["127.0.0.1"])
    inv = rt.invocation()
    out = inv.run_state.workspace_root / "output"
    (out / "hi.ogg").mkdir(parents=True)  # a folder takes the name as a file would
    (out / "hi-2.ogg").write_bytes(b"mine")
    [saved] = inv.run([{"id": "a", "name": "generate_audio", "arguments": {"text": "x", "output_file": "hi"}}])
    assert json.loads(saved.content)["path"] == "output/hi-3.ogg"
    monkeypatch.setattr(media_files, "MAX_NAMES", 3)
    [full] = inv.run([{"id": "b", "name": "generate_audio", "arguments": {"text": "x", "output_file": "hi"}}])
    assert full.error_code == "media.no_free_name" and "output/hi.ogg and 2 numbered variants" in full.content
    assert sorted(p.name for p in out.iterdir()) == ["hi-2.ogg", "hi-3.ogg", "hi.ogg"]
    assert (out / "hi-2.ogg").read_bytes() == b"mine" and (out / "hi-3.ogg").read_bytes() == OGG


def test_a_model_of_another_provider_is_refused(make_runtime: MakeRuntime, tmp_path: Path,
                                                server: LoopbackServer) -> None:
    home = _home(tmp_path, server, provider="anthropic")
    result, _ = _run(make_runtime, home, "generate_image", {"prompt": "p"})
    assert result.error_code == "media.not_configured" and 'provider = "openai"' in result.content
    assert server.requests == []


def test_the_time_limit_stops_the_request(make_runtime: MakeRuntime, tmp_path: Path, server: LoopbackServer,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path, server)
    monkeypatch.setattr(media, "AUDIO_TIMEOUT_S", 0.5)
    server.answers["/v1/audio/speech"] = Answer(200, OGG, {"content-type": "audio/ogg"}, delay_s=3)
    result, root = _run(make_runtime, home, "generate_audio", {"text": "slow"})
    assert result.error_code == "http.timeout"
    deadline = time.monotonic() + 20
    while server.closed < server.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.closed == server.connections == 1
    assert not (root / "output").exists() or not any((root / "output").iterdir())


def test_an_image_url_that_never_answers_is_http_timeout(make_runtime: MakeRuntime, tmp_path: Path,
                                                         server: LoopbackServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The image's own download maps httpx's errors as every network tool does (it was request_failed)."""
    home = _home(tmp_path, server)
    monkeypatch.setattr(media, "IMAGE_TIMEOUT_S", 2.0)
    server.answers["/v1/images/generations"] = Answer(200, json.dumps({"data": [{"url": f"{server.url}/img/1"}]})
                                                      .encode())
    server.answers["/img/1"] = Answer(200, PNG, {"content-type": "image/png"}, delay_s=6)
    result, root = _run(make_runtime, home, "generate_image", {"prompt": "p"})
    assert result.error_code == "http.timeout" and "nothing was saved" in result.content
    deadline = time.monotonic() + 30
    while server.closed < server.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.closed == server.connections  # the stalled download was closed, not left waiting
    assert not (root / "output").exists() or not any((root / "output").iterdir())


def test_a_role_naming_no_model_is_a_config_error(tmp_path: Path) -> None:
    from tooldeck.agent.errors import ModelError
    from tooldeck.agent.models import parse_models

    table = parse_models({"image": "pics", "pics": {"model": "m"}})
    assert table.image == "pics" and table.tts is None and list(table.models) == ["pics"]
    with pytest.raises(ModelError) as err:
        parse_models({"tts": "missing", "pics": {"model": "m"}})
    assert err.value.code == "model.config_invalid" and "models.tts names 'missing'" in err.value.message
    with pytest.raises(ModelError):
        parse_models({"image": 3})
    assert parse_models({"image": {"model": "m"}}).models["image"].model == "m"  # a model named image
