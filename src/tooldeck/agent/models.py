"""The `[models]` table of `<home>/tooldeck.toml`: named models, each a provider, a model id, an
endpoint, a key and limits (docs/configuration.md, "Models").

    [models]
    default = "fast"                       # the model `tooldeck run` uses without --model

    [models.fast]
    provider = "openai"                    # openai | openai_responses | anthropic | gemini
    model = "gpt-4.1-mini"
    api_key = "${OPENAI_API_KEY}"          # optional: the provider's usual variable is the default

    [models.local]                         # Ollama, vLLM, llama.cpp: their OpenAI-compatible endpoint
    provider = "openai"
    model = "qwen3:8b"
    base_url = "http://127.0.0.1:11434/v1"

`image = "<name>"` and `tts = "<name>"` beside `default` name the models `generate_image` and
`generate_audio` use (builtins/media.py).

`${VAR}` / `${VAR:-default}` are expanded in `api_key`, `base_url` and `headers` of the model in use
only, when it is used, so a variable another model needs may stay unset. The key lives in the
`ModelConfig` and nowhere else: not in the records, not in any message or printout.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.providers import provider_format
from tooldeck.agent.types import ModelConfig
from tooldeck.core.errors import TooldeckError

CONFIG_FILE = "tooldeck.toml"
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "openai_responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
"""The variables each provider's key is read from when `api_key` is not configured."""


class ModelEntry(BaseModel):
    """One `[models.<name>]` table. Times are seconds."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    provider: str = "openai"
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(600.0, gt=0, le=24 * 3600)
    connect_timeout: float = Field(10.0, gt=0, le=600)
    max_retries: int = Field(4, ge=0, le=20)
    retry_base_delay: float = Field(0.5, ge=0, le=600)
    retry_max_delay: float = Field(30.0, ge=0, le=3600)
    max_output_tokens: int | None = Field(None, ge=1)
    max_turns: int | None = Field(None, ge=1)
    """Model turns per run (the loop's default is 50)."""
    max_tokens: int | None = Field(None, ge=1)
    """Input plus output tokens per run, summed over its turns."""
    stream: bool = True
    options: dict[str, Any] = Field(default_factory=dict)
    """Extra request body fields (temperature, reasoning effort …), sent as they are."""
    reasoning: bool = True
    """Whether a request's reasoning effort (a subagent leg's `reasoning`) is sent to this model."""


class ModelsTable(BaseModel):
    default: str | None
    models: dict[str, ModelEntry]
    image: str | None = None
    """`models.image`: the model `generate_image` uses (an OpenAI-compatible images endpoint)."""
    tts: str | None = None
    """`models.tts`: the model `generate_audio` uses (an OpenAI-compatible speech endpoint)."""


ROLES = ("default", "image", "tts")
"""`[models]` keys that name a model instead of being one (a table under one of these names is a model)."""


def load_models(home: Path) -> ModelsTable:
    """The `[models]` table of the home's tooldeck.toml (empty when the file or the table is absent)."""
    path = home / CONFIG_FILE
    if not path.is_file():
        return ModelsTable(default=None, models={})
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(errors.CONFIG_INVALID, f"cannot read {path}: {exc}") from exc
    return parse_models(data.get("models", {}), str(path))


def parse_models(table: Any, where: str = CONFIG_FILE) -> ModelsTable:
    if not isinstance(table, Mapping):
        raise ModelError(errors.CONFIG_INVALID, f"{where}: `models` must be a table ([models])")
    roles: dict[str, str | None] = {}
    for role in ROLES:
        value = table.get(role)
        if value is not None and not isinstance(value, Mapping):
            if not isinstance(value, str) or not value:
                raise ModelError(errors.CONFIG_INVALID, f"{where}: models.{role} must be the name of a model")
            roles[role] = value
        else:
            roles[role] = None
    default = roles["default"]
    models: dict[str, ModelEntry] = {}
    for name, entry in table.items():
        if name in ROLES and not isinstance(entry, Mapping):
            continue
        if not isinstance(entry, Mapping):
            raise ModelError(errors.CONFIG_INVALID, f"{where}: models.{name} must be a table ([models.{name}])")
        try:
            models[name] = ModelEntry.model_validate(dict(entry))
        except ValidationError as exc:
            raise ModelError(errors.CONFIG_INVALID, f"{where}: {_problems(name, exc)}") from None
        try:
            provider_format(models[name].provider)
        except ModelError as exc:
            raise ModelError(errors.CONFIG_INVALID, f"{where}: models.{name}.provider: {exc.message}") from None
    for role, chosen in roles.items():
        if chosen is not None and chosen not in models:
            raise ModelError(errors.CONFIG_INVALID, f"{where}: models.{role} names {chosen!r}, which is not a model "
                             f"here (the models are: {', '.join(models) or 'none'})")
    return ModelsTable(default=default, models=models, image=roles["image"], tts=roles["tts"])


def _problems(name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        key = f"models.{name}." + ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = f"unknown key (the keys are {', '.join(ModelEntry.model_fields)}; see docs/configuration.md)"
        parts.append(f"`{key}`: {msg}")
    return "; ".join(parts)


def _expand(value: str, where: str, environ: Mapping[str, str]) -> str:
    from tooldeck.sources.mcp.config_checks import expand

    try:
        return expand(value, where, environ)
    except TooldeckError as exc:
        raise ModelError(errors.CONFIG_INVALID, exc.message) from None


def resolve_model(home: Path | None = None, model: str | None = None, *, provider: str | None = None,
                  base_url: str | None = None, api_key: str | None = None,
                  environ: Mapping[str, str] | None = None, **overrides: Any) -> ModelConfig:
    """The model to run: `model` names a `[models]` entry, or else is a provider's model id (with
    `provider`, default openai); without it, `models.default`, or the only model configured.
    `provider`, `base_url`, `api_key` and `overrides` (ModelEntry keys) win over the table."""
    env = os.environ if environ is None else environ
    table = load_models(home) if home is not None else ModelsTable(default=None, models={})
    name = model or table.default or (next(iter(table.models)) if len(table.models) == 1 else None)
    if name is None:
        where = f"{home / CONFIG_FILE}" if home is not None else "tooldeck.toml"
        raise ModelError(errors.CONFIG_INVALID, "no model chosen: pass --model MODEL (a model id such as "
                         f"gpt-4.1-mini, with --provider) or add a [models] table to {where}"
                         + (f" (it has {len(table.models)} models and no models.default)" if table.models else ""))
    entry = table.models.get(name)
    fields: dict[str, Any] = entry.model_dump() if entry is not None else {"model": name}
    if provider is not None:
        fields["provider"] = provider
    if base_url is not None:
        fields["base_url"] = base_url
    fields.update({k: v for k, v in overrides.items() if v is not None})
    try:
        entry = ModelEntry.model_validate(fields)
    except ValidationError as exc:
        raise ModelError(errors.CONFIG_INVALID, _problems(name, exc)) from None
    fmt = provider_format(entry.provider)
    where = f"models.{name}"
    url = _expand(entry.base_url, f"{where}.base_url", env) if entry.base_url else None
    if url is not None and not url.startswith(("http://", "https://")):
        raise ModelError(errors.CONFIG_INVALID, f"{where}.base_url {url!r} must start with http:// or https://")
    key = api_key or (_expand(entry.api_key, f"{where}.api_key", env) if entry.api_key else None)
    label = "model api key"
    if not key:
        label, key = next(((v, env[v]) for v in KEY_VARIABLES[fmt] if env.get(v)), (label, None))
    from tooldeck.policy.known_secrets import KNOWN

    KNOWN.remember(label, key)  # never in a tool's result either (docs/configuration.md, Secret redaction)
    if not key and url is None:
        variables = " or ".join(KEY_VARIABLES[fmt])
        raise ModelError(errors.CONFIG_INVALID, f"no API key for model {name!r} ({fmt}): set {variables}, or "
                         f"api_key = \"${{VAR}}\" in [{where}]")
    headers = {k: _expand(v, f"{where}.headers.{k}", env) for k, v in entry.headers.items()}
    return ModelConfig(name, fmt, entry.model, base_url=url, api_key=key or None, headers=headers,
                       timeout=entry.timeout, connect_timeout=entry.connect_timeout, max_retries=entry.max_retries,
                       retry_base_delay=entry.retry_base_delay, retry_max_delay=entry.retry_max_delay,
                       max_output_tokens=entry.max_output_tokens, max_turns=entry.max_turns,
                       max_tokens_per_run=entry.max_tokens, stream=entry.stream, options=dict(entry.options),
                       reasoning=entry.reasoning)
