"""The [models] table of tooldeck.toml: names, defaults, keys from the environment, overrides, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooldeck.agent.errors import ModelError
from tooldeck.agent.models import load_models, resolve_model

TOML = """
[models]
default = "fast"

[models.fast]
provider = "openai"
model = "gpt-4.1-mini"
api_key = "${MY_OPENAI_KEY}"
max_turns = 7
max_tokens = 9000
options = { temperature = 0.2 }

[models.local]
model = "qwen3:8b"
base_url = "http://127.0.0.1:11434/v1"

[models.claude]
provider = "claude"
model = "claude-sonnet-4-5"
headers = { "anthropic-beta" = "${BETA:-none}" }
"""


def home(tmp_path: Path, text: str = TOML) -> Path:
    (tmp_path / "tooldeck.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_the_default_model_with_its_key_from_a_variable(tmp_path: Path) -> None:
    cfg = resolve_model(home(tmp_path), environ={"MY_OPENAI_KEY": "sk-1"})
    assert (cfg.name, cfg.provider, cfg.model, cfg.api_key) == ("fast", "openai", "gpt-4.1-mini", "sk-1")
    assert (cfg.max_turns, cfg.max_tokens_per_run, dict(cfg.options)) == (7, 9000, {"temperature": 0.2})
    assert "sk-1" not in repr(cfg) and "sk-1" not in str(cfg.public())


def test_a_local_server_needs_no_key(tmp_path: Path) -> None:
    cfg = resolve_model(home(tmp_path), "local", environ={})
    assert cfg.base_url == "http://127.0.0.1:11434/v1" and cfg.api_key is None and cfg.provider == "openai"


def test_provider_default_variables_and_aliases(tmp_path: Path) -> None:
    cfg = resolve_model(home(tmp_path), "claude", environ={"ANTHROPIC_API_KEY": "ak"})
    assert (cfg.provider, cfg.api_key, dict(cfg.headers)) == ("anthropic", "ak", {"anthropic-beta": "none"})
    gem = resolve_model(None, "gemini-2.5-flash", provider="gemini", environ={"GOOGLE_API_KEY": "g"})
    assert (gem.provider, gem.model, gem.api_key) == ("gemini", "gemini-2.5-flash", "g")
    assert resolve_model(None, "m", provider="gemini", environ={"GEMINI_API_KEY": "a", "GOOGLE_API_KEY": "b"}
                         ).api_key == "a"


def test_flags_win_over_the_table(tmp_path: Path) -> None:
    cfg = resolve_model(home(tmp_path), "fast", base_url="http://127.0.0.1:8000/v1", max_turns=3,
                        environ={"MY_OPENAI_KEY": "k"})
    assert cfg.base_url == "http://127.0.0.1:8000/v1" and cfg.max_turns == 3


def test_a_model_id_that_is_not_configured(tmp_path: Path) -> None:
    cfg = resolve_model(home(tmp_path), "gpt-5", environ={"OPENAI_API_KEY": "k"})
    assert (cfg.name, cfg.model, cfg.provider) == ("gpt-5", "gpt-5", "openai")


@pytest.mark.parametrize(("text", "model", "env", "says"), [
    (TOML, None, {}, "MY_OPENAI_KEY is not set"),
    (TOML, "gpt-5", {}, "set OPENAI_API_KEY"),
    (TOML, "x", {}, "set OPENAI_API_KEY"),
    ("[models.a]\nmodel = 'x'\nbase_url = 'ftp://h'\n", None, {}, "must start with http"),
    ("[models.a]\nmodel = 'x'\n[models.b]\nmodel = 'y'\n", None, {}, "no model chosen"),
    ("", None, {}, "no model chosen"),
    ("[models]\ndefault = 'nope'\n[models.a]\nmodel = 'x'\n", None, {}, "not a model here"),
    ("[models.a]\nmodel = 'x'\ntemprature = 1\n", None, {}, "`models.a.temprature`: unknown key"),
    ("[models.a]\nmodel = 'x'\nprovider = 'cohere'\n", None, {}, "unknown model provider 'cohere'"),
    ("[models.a]\nmodel = 'x'\nmax_turns = 0\n", None, {}, "models.a.max_turns"),
    ("[models]\na = 3\n", None, {}, "models.a must be a table"),
    ("models = [", None, {}, "cannot read"),
])
def test_config_errors(tmp_path: Path, text: str, model: str | None, env: dict[str, str], says: str) -> None:
    with pytest.raises(ModelError) as info:
        resolve_model(home(tmp_path, text), model, environ=env)
    assert info.value.code == "model.config_invalid"
    assert says in info.value.message


def test_no_file_is_an_empty_table(tmp_path: Path) -> None:
    assert load_models(tmp_path).models == {}
