"""`store_secret` and the secrets store: the value goes from the user's prompt to the store and never into
results or records; the encrypted file (this machine's backend) is private, atomic across processes and
refuses a key others can read; `${secret:NAME}` resolves in MCP and model configs; `requires.secret` sees
the store; the keychain backend through `keyring`."""

from __future__ import annotations

import json
import multiprocessing
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tooldeck.core.errors import TooldeckError
from tooldeck.secrets import SecretStore, name_problem, prompt
from tooldeck.secrets.filebox import FileBox
from tooldeck.secrets.prompt import SecretRequest

SECRET = "sk-test-Zq8#not-for-models-4711"


def _call(make_runtime: MakeRuntime, args: dict[str, Any], *, headless: bool = False, **keys: Any) -> Any:
    rt = make_runtime(loading="eager", allow=["builtin:store_secret"], **keys)
    inv = rt.invocation(headless=headless)
    [result] = inv.run([{"id": "s1", "name": "store_secret", "arguments": args}])
    return result


def _home_bytes(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_the_value_reaches_the_store_and_never_the_result_or_the_records(make_runtime: MakeRuntime,
                                                                        tmp_path: Path) -> None:
    asked: list[SecretRequest] = []

    async def typed(request: SecretRequest) -> str:
        asked.append(request)
        return SECRET

    prompt.set_prompt(typed)
    result = _call(make_runtime, {"key": "API_TOKEN", "question": "Your API token?"}, home="h")
    assert not result.is_error, result.content
    assert json.loads(result.content) == {"ok": True, "key": "API_TOKEN"}
    assert [(r.key, r.question) for r in asked] == [("API_TOKEN", "Your API token?")]
    assert SecretStore().get("API_TOKEN") == SECRET
    records = tmp_path / "h" / "records.sqlite"
    assert records.exists()
    assert SECRET.encode() not in _home_bytes(tmp_path / "h")  # records.sqlite, its -wal, every other file
    assert b"API_TOKEN" in _home_bytes(tmp_path / "h")  # the records do hold the call itself
    assert SECRET.encode() not in _home_bytes(tmp_path / "user-secrets")  # the store holds it encrypted


def test_the_default_question_and_a_plain_prompt(make_runtime: MakeRuntime) -> None:
    seen: list[str] = []
    prompt.set_prompt(lambda r: seen.append(r.question) or "v")
    result = _call(make_runtime, {"key": "X"})
    assert not result.is_error and seen == ["X is required"]


def test_empty_declined_and_no_prompt_store_nothing(make_runtime: MakeRuntime) -> None:
    prompt.set_prompt(lambda r: "   ")
    result = _call(make_runtime, {"key": "EMPTY_ONE"}, home="a")
    assert result.is_error and result.error_code == "secret.empty" and result.content.endswith("EMPTY_ONE is empty")
    prompt.set_prompt(lambda r: None)
    result = _call(make_runtime, {"key": "DECLINED"}, home="b")
    assert result.is_error and result.error_code == "secret.declined"
    prompt.set_prompt(None)  # pytest's stdin is no terminal: nobody can be asked
    result = _call(make_runtime, {"key": "NOBODY"}, home="c")
    assert result.is_error and result.error_code == "secret.no_prompt"
    assert "tooldeck secret set NOBODY" in result.content
    assert SecretStore().names() == []


@pytest.mark.parametrize("key", ["1ABC", "A-B", "A B", "ÄPI", "x" * 129])
def test_a_bad_name_is_refused_before_anyone_is_asked(make_runtime: MakeRuntime, key: str) -> None:
    asked: list[str] = []
    prompt.set_prompt(lambda r: asked.append(r.key) or "v")
    result = _call(make_runtime, {"key": key})
    assert result.is_error and result.error_code == "secret.invalid_name", result.content
    assert asked == [] and SecretStore().names() == []


def test_headless_invocations_do_not_see_the_tool(make_runtime: MakeRuntime) -> None:
    result = _call(make_runtime, {"key": "K"}, headless=True)
    assert result.is_error and result.error_code == "tool.unknown_tool"


def test_the_file_store_is_private_and_encrypted(secrets_dir: Path) -> None:
    store = SecretStore()
    assert store.backend == "file"
    store.set("A", SECRET)
    assert stat.S_IMODE(secrets_dir.stat().st_mode) == 0o700
    for name in ("secrets.key", "secrets.enc"):
        assert stat.S_IMODE((secrets_dir / name).stat().st_mode) == 0o600
    assert SECRET.encode() not in (secrets_dir / "secrets.enc").read_bytes()
    assert store.get("A") == SECRET and store.names() == ["A"]
    assert store.delete("A") and not store.delete("A") and store.get("A") is None


def test_a_key_others_can_read_is_refused(make_runtime: MakeRuntime, secrets_dir: Path) -> None:
    SecretStore().set("A", "one")
    os.chmod(secrets_dir / "secrets.key", 0o644)
    with pytest.raises(TooldeckError) as err:
        SecretStore().get("A")
    assert err.value.code == "secret.unavailable" and "chmod 600" in err.value.message
    prompt.set_prompt(lambda r: "two")
    result = _call(make_runtime, {"key": "B"})
    assert result.is_error and result.error_code == "secret.unavailable"


def test_a_lost_key_or_a_foreign_file_is_a_clear_error(secrets_dir: Path) -> None:
    SecretStore().set("A", "one")
    (secrets_dir / "secrets.key").unlink()
    with pytest.raises(TooldeckError, match=r"its key .* is gone"):
        SecretStore().get("A")
    (secrets_dir / "secrets.enc").write_bytes(b"gAAAA-not-a-token")
    SecretStore().box._fernet(create=True)
    with pytest.raises(TooldeckError, match="does not decrypt"):
        SecretStore().get("A")


def _set_many(directory: str, worker: int) -> None:
    os.environ["TOOLDECK_SECRETS_DIR"] = directory
    os.environ["TOOLDECK_SECRETS_BACKEND"] = "file"
    store = SecretStore()
    for i in range(10):
        store.set(f"W{worker}_{i}", f"value-{worker}-{i}")


def test_processes_sharing_the_store_lose_no_write(secrets_dir: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_set_many, args=(str(secrets_dir), w)) for w in range(4)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(120)
        assert p.exitcode == 0
    secrets = FileBox(secrets_dir).read_all()
    assert secrets == {f"W{w}_{i}": f"value-{w}-{i}" for w in range(4) for i in range(10)}
    assert len({(secrets_dir / "secrets.key").read_bytes()}) == 1
    assert not [p for p in secrets_dir.iterdir() if p.name.startswith(".")]  # no temporary file left


class MemoryKeyring:
    """A keyring backend in memory (the `KeyringBackend` methods the store uses)."""

    priority = 5

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, name: str) -> str | None:
        return self.items.get((service, name))

    def set_password(self, service: str, name: str, value: str) -> None:
        self.items[(service, name)] = value

    def delete_password(self, service: str, name: str) -> None:
        del self.items[(service, name)]


def test_the_keychain_backend(secrets_dir: Path) -> None:
    ring = MemoryKeyring()
    store = SecretStore(keyring_backend=ring)
    assert store.backend == "keyring"
    store.set("GITHUB_TOKEN", SECRET)
    assert ring.items == {("tooldeck", "GITHUB_TOKEN"): SECRET}
    assert store.get("GITHUB_TOKEN") == SECRET and store.names() == ["GITHUB_TOKEN"]
    assert SECRET.encode() not in (secrets_dir / "names.json").read_bytes()
    assert not (secrets_dir / "secrets.enc").exists()
    assert store.delete("GITHUB_TOKEN") and store.names() == [] and not store.delete("GITHUB_TOKEN")


def test_the_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring

    from tooldeck.secrets.store import chosen_backend

    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "auto")
    monkeypatch.setattr(keyring, "get_keyring", lambda: MemoryKeyring())
    assert chosen_backend() == "keyring"

    class Fail:
        priority = 0

    monkeypatch.setattr(keyring, "get_keyring", lambda: Fail())
    assert chosen_backend() == "file"  # a headless machine: keyring has no real backend
    monkeypatch.setenv("TOOLDECK_SECRETS_BACKEND", "vault")
    with pytest.raises(TooldeckError) as err:
        chosen_backend()
    assert err.value.code == "secret.unavailable"


# -- configs -------------------------------------------------------------------------------------


def test_secret_references_in_mcp_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    from tooldeck.sources.mcp import config as cfg
    from tooldeck.sources.mcp.errors import McpConfigError

    SecretStore().set("MCP_TOKEN", SECRET)
    http = cfg.ServerConfig(name="h", url="http://127.0.0.1:1/mcp",
                            headers={"Authorization": "Bearer ${secret:MCP_TOKEN}"})
    assert cfg.resolve_endpoint(http, {}).headers == {"Authorization": f"Bearer {SECRET}"}
    stdio = cfg.ServerConfig(name="s", command="c", env={"T": "${secret:MISSING:-none}", "U": "${secret:FROM_ENV}"})
    monkeypatch.setenv("FROM_ENV", "env-value")
    assert cfg.resolve_endpoint(stdio, {}).env == {"T": "none", "U": "env-value"}
    missing = cfg.ServerConfig(name="m", command="c", env={"T": "${secret:NOT_STORED}"})
    with pytest.raises(McpConfigError) as err:
        cfg.resolve_endpoint(missing, {})
    assert err.value.code == "mcp.config_env_missing" and "tooldeck secret set NOT_STORED" in err.value.message


def test_secret_references_in_models(tmp_path: Path) -> None:
    from tooldeck.agent.models import resolve_model

    SecretStore().set("MODEL_KEY", SECRET)
    (tmp_path / "tooldeck.toml").write_text('[models.m]\nprovider = "openai"\nmodel = "x"\n'
                                            'api_key = "${secret:MODEL_KEY}"\n')
    config = resolve_model(tmp_path, "m", environ={})
    assert config.api_key == SECRET and SECRET not in repr(config)


def test_requires_secret_sees_the_store(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DICE_SECRET", raising=False)
    keys = {"allow": ["builtin:dice.roll"], "requires": {"builtin:dice.roll": {"secret": "DICE_SECRET"}}}
    rt = make_runtime(loading="eager", **keys)
    assert [t["function"]["name"] for t in rt.invocation().tools()] == []
    SecretStore().set("DICE_SECRET", "x")
    assert [t["function"]["name"] for t in rt.invocation().tools()] == ["dice_roll"]


# -- generated inputs ----------------------------------------------------------------------------


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), st.text(max_size=30)),
       value=st.text(min_size=1, max_size=200))
def test_names_are_checked_and_values_round_trip(secrets_dir: Path, name: str, value: str) -> None:
    box = FileBox(secrets_dir)
    problem = name_problem(name)
    valid = bool(name) and (name[0].isascii() and (name[0].isalpha() or name[0] == "_")) and all(
        c.isascii() and (c.isalnum() or c == "_") for c in name)
    assert (problem is None) == valid, (name, problem)
    if problem is None:
        box.set(name, value)
        assert box.get(name) == value
