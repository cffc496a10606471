"""One module per wire format, each a `ModelClient` (agent/types.py) built on `tooldeck.protocols`.

`make_client(config)` imports only the module of the configured format. The table names each
format's class; a module is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from tooldeck.agent import errors
from tooldeck.agent.errors import ModelError
from tooldeck.agent.types import ModelClient, ModelConfig
from tooldeck.core.errors import TooldeckError
from tooldeck.protocols import format_name

CLIENTS: dict[str, str] = {
    "openai": "tooldeck.agent.providers.openai_chat:OpenAIChatClient",
    "openai_responses": "tooldeck.agent.providers.openai_responses:OpenAIResponsesClient",
    "anthropic": "tooldeck.agent.providers.anthropic:AnthropicClient",
    "gemini": "tooldeck.agent.providers.gemini:GeminiClient",
}
"""Format → `module:Class`; each class takes `(config, *, client=None, transport=None)`."""

SUPPORTED = tuple(CLIENTS)


def provider_format(provider: str) -> str:
    """The format of a provider name (aliases: chat, openai_chat, responses, claude)."""
    try:
        fmt = format_name(provider)
    except TooldeckError:
        fmt = None
    if fmt not in CLIENTS:
        raise ModelError(errors.CONFIG_INVALID, f"unknown model provider {provider!r}; expected one of "
                         f"{', '.join(SUPPORTED)} (an OpenAI-compatible server such as Ollama, vLLM or llama.cpp is "
                         "provider 'openai' with its base_url)")
    return fmt  # type: ignore[return-value]


def client_class(provider: str) -> Any:
    fmt = provider_format(provider)
    module, _, name = CLIENTS[fmt].partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ModelError(errors.CONFIG_INVALID, f"the {fmt} provider is not available in this build ({exc})") from None


def make_client(config: ModelConfig, **kwargs: Any) -> ModelClient:
    """The client for `config` (kwargs: `client=` an httpx.AsyncClient, `transport=` a Transport)."""
    return client_class(config.provider)(config, **kwargs)  # type: ignore[no-any-return]
