"""A request's reasoning effort on the wire of each provider, against the loopback mock: Chat
Completions `reasoning_effort`, Responses `reasoning.effort`, an Anthropic thinking budget (with
`max_tokens` raised by it, and none with a forced tool), a Gemini `thinkingConfig`; nothing without an
effort or for a model configured with `reasoning = false`; a model's `options` win."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent import chat_replies as chat
from tests.agent import test_provider_anthropic as anthropic
from tests.agent import test_provider_gemini as gemini
from tests.agent import test_provider_responses as responses
from tests.agent.mock_provider import MockProvider, Reply
from tooldeck.agent.errors import ModelError
from tooldeck.agent.models import resolve_model
from tooldeck.agent.providers import make_client
from tooldeck.agent.providers.reasoning import EFFORTS, THINKING_BUDGETS, effort_of
from tooldeck.agent.types import ModelConfig, ModelRequest

USER = {"openai": {"role": "user", "content": "hi"}, "openai_responses": {"role": "user", "content": "hi"},
        "anthropic": {"role": "user", "content": "hi"}, "gemini": {"role": "user", "parts": [{"text": "hi"}]}}


def answer(provider: str) -> Reply:
    if provider == "openai":
        return Reply.json(chat.completion("ok", finish="stop"))
    if provider == "openai_responses":
        return Reply.json(responses.response([responses.message("ok")]))
    if provider == "anthropic":
        return Reply.json(anthropic.message([anthropic.text("ok")], "end_turn"))
    return Reply.json(gemini.chunk([{"text": "ok"}], "STOP"))


def config(mock: MockProvider, provider: str, **kw: Any) -> ModelConfig:
    base = {"openai": "/v1", "openai_responses": "/v1", "anthropic": "", "gemini": "/v1beta"}[provider]
    return ModelConfig("m", provider, "model-x", base_url=mock.url + base, api_key="k", max_retries=0, **kw)


async def body(mock: MockProvider, provider: str, effort: str | None, tool_choice: Any = "auto",
               tools: tuple[dict[str, Any], ...] = (), **kw: Any) -> dict[str, Any]:
    mock.script(answer(provider))
    client = make_client(config(mock, provider, **kw))
    try:
        turn = await client.complete(ModelRequest([USER[provider]], tools, tool_choice=tool_choice, stream=False,
                                                  reasoning=effort))
    finally:
        await client.aclose()
    assert turn.text == "ok"
    return mock.requests[-1].json  # type: ignore[no-any-return]


@pytest.mark.parametrize("effort", EFFORTS)
async def test_each_provider_carries_the_effort(mock_provider: MockProvider, effort: str) -> None:
    budget = THINKING_BUDGETS[effort]
    assert (await body(mock_provider, "openai", effort))["reasoning_effort"] == effort
    assert (await body(mock_provider, "openai_responses", effort))["reasoning"] == {"effort": effort}
    sent = await body(mock_provider, "anthropic", effort)
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": budget} and sent["max_tokens"] == 8192 + budget
    sent = await body(mock_provider, "gemini", effort, max_output_tokens=64)
    assert sent["generationConfig"] == {"maxOutputTokens": 64, "thinkingConfig": {"thinkingBudget": budget}}
    sent = await body(mock_provider, "gemini", effort)
    assert sent["generationConfig"] == {"thinkingConfig": {"thinkingBudget": budget}}


async def test_no_effort_or_a_model_without_reasoning_sends_none(mock_provider: MockProvider) -> None:
    keys = {"openai": "reasoning_effort", "openai_responses": "reasoning", "anthropic": "thinking",
            "gemini": "generationConfig"}
    for provider, key in keys.items():
        assert key not in await body(mock_provider, provider, None)
        assert key not in await body(mock_provider, provider, "high", reasoning=False)
    assert (await body(mock_provider, "anthropic", None))["max_tokens"] == 8192


async def test_a_forced_tool_keeps_anthropic_thinking_off_and_options_win(mock_provider: MockProvider) -> None:
    for choice in ("required", {"name": "add"}):
        sent = await body(mock_provider, "anthropic", "high", tool_choice=choice, tools=anthropic.TOOLS)
        assert "thinking" not in sent and sent["max_tokens"] == 8192
    sent = await body(mock_provider, "anthropic", "high", tool_choice="none", tools=anthropic.TOOLS)
    assert sent["thinking"]["budget_tokens"] == THINKING_BUDGETS["high"]
    sent = await body(mock_provider, "openai", "low", options={"reasoning_effort": "minimal"})
    assert sent["reasoning_effort"] == "minimal"


def test_the_models_table_turns_it_off_and_bad_values_are_refused(tmp_path: Any) -> None:
    toml = tmp_path / "tooldeck.toml"
    toml.write_text('[models.plain]\nmodel = "gpt-4.1-mini"\nreasoning = false\n', encoding="utf-8")
    assert resolve_model(tmp_path, "plain", api_key="k").reasoning is False
    assert resolve_model(tmp_path, "o4-mini", api_key="k").reasoning is True  # not in the table: the default
    toml.write_text('[models.bad]\nmodel = "o4-mini"\nreasoning = "yes"\n', encoding="utf-8")
    with pytest.raises(ModelError) as err:
        resolve_model(tmp_path, "bad", api_key="k")
    assert err.value.code == "model.config_invalid" and "models.bad.reasoning" in err.value.message
    with pytest.raises(ValueError, match="reasoning effort 'max' must be one of low, medium, high"):
        effort_of("max")


async def test_an_object_in_options_merges_into_the_one_built(mock_provider: MockProvider) -> None:
    options = {"generationConfig": {"temperature": 0.2}}
    sent = await body(mock_provider, "gemini", "low", max_output_tokens=64, options=options)
    assert sent["generationConfig"] == {"maxOutputTokens": 64, "temperature": 0.2,
                                        "thinkingConfig": {"thinkingBudget": THINKING_BUDGETS["low"]}}
    assert options == {"generationConfig": {"temperature": 0.2}}  # the config's own object is not written into
    sent = await body(mock_provider, "openai_responses", "high", options={"reasoning": {"summary": "auto"}})
    assert sent["reasoning"] == {"effort": "high", "summary": "auto"}
    sent = await body(mock_provider, "gemini", "low", options={"generationConfig": None})
    assert sent["generationConfig"] is None  # a non-object still replaces
