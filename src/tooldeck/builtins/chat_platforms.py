"""The two chat platforms' REST calls, in their real request shapes, through the guarded client.

Telegram Bot API: `POST {api}/bot<token>/sendMessage` `{chat_id, text, parse_mode: "HTML"}` and
`POST {api}/bot<token>/getChat` `{chat_id}`; answers `{ok, result}` or `{ok: false, error_code,
description, parameters: {retry_after}}`. Discord REST: `POST {api}/channels/<id>/messages`
`{content, allowed_mentions: {parse: []}}` and `GET {api}/channels/<id>`, with `Authorization: Bot
<token>`; errors `{message, code}`, 429 with `retry_after` seconds. A 429 asking for at most 5 s is
waited for and tried once more. The token is in a URL (Telegram) or a header (Discord), so no error
text here quotes a URL or an exception's text: only the platform's own description.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.net import read_capped

if TYPE_CHECKING:
    import httpx

    from tooldeck.builtins.chatbot_config import Platform

REQUEST_TIMEOUT_S: Final = 30.0
MAX_RETRY_WAIT_S: Final = 5.0
MAX_ANSWER_BYTES: Final = 1024 * 1024


class ChatError(Exception):
    """A platform refused or could not be reached; `message` is safe to show (no token, no URL)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


async def _exchange(client: httpx.AsyncClient, method: str, url: str, **request: Any) -> tuple[int, Any]:
    import httpx
    import orjson

    for attempt in (1, 2):
        try:
            async with client.stream(method, url, timeout=REQUEST_TIMEOUT_S, **request) as response:
                body, _ = await read_capped(response, MAX_ANSWER_BYTES)
        except httpx.TimeoutException:
            raise ChatError(f"no answer within {REQUEST_TIMEOUT_S:g} s") from None
        except httpx.HTTPError as exc:
            raise ChatError(f"the platform could not be reached ({type(exc).__name__})") from None
        try:
            data = orjson.loads(body) if body else None
        except orjson.JSONDecodeError:
            data = None
        if response.status_code == 429 and attempt == 1:
            wait = _retry_after(data)
            if wait is not None and wait <= MAX_RETRY_WAIT_S:
                await asyncio.sleep(wait)
                continue
        return response.status_code, data
    raise AssertionError("unreachable")


def _retry_after(data: Any) -> float | None:
    if not isinstance(data, dict):
        return None
    value = data.get("retry_after", (data.get("parameters") or {}).get("retry_after"))
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None


def _safe(text: Any, token: str) -> str:
    return str(text).replace(token, "***")[:500]


# -- Telegram -----------------------------------------------------------------------------------------


async def _telegram(client: httpx.AsyncClient, platform: Platform, token: str, method: str,
                    payload: dict[str, Any]) -> Any:
    status, data = await _exchange(client, "POST", f"{platform.api_url}/bot{token}/{method}", json=payload)
    if isinstance(data, dict) and data.get("ok") is True:
        return data.get("result")
    if isinstance(data, dict) and data.get("description"):
        raise ChatError(f"Telegram said {data.get('error_code', status)}: {_safe(data['description'], token)}", status)
    raise ChatError(f"Telegram answered http {status} without a Bot API answer", status)


async def telegram_send(client: httpx.AsyncClient, platform: Platform, token: str, chat_id: str, text: str) -> str:
    result = await _telegram(client, platform, token, "sendMessage",
                             {"chat_id": chat_id, "text": text, "parse_mode": "HTML"})
    return str(result.get("message_id")) if isinstance(result, dict) else ""


async def telegram_chat(client: httpx.AsyncClient, platform: Platform, token: str, chat_id: str) -> dict[str, Any]:
    result = await _telegram(client, platform, token, "getChat", {"chat_id": chat_id})
    if not isinstance(result, dict):
        return {}
    title = result.get("title") or result.get("username") or " ".join(
        str(result[k]) for k in ("first_name", "last_name") if result.get(k))
    return {"title": title, "type": result.get("type")}


# -- Discord ------------------------------------------------------------------------------------------


def _discord_error(status: int, data: Any, token: str) -> ChatError:
    if isinstance(data, dict) and data.get("message"):
        return ChatError(f"Discord said {status}: {_safe(data['message'], token)}", status)
    return ChatError(f"Discord answered http {status}", status)


async def discord_send(client: httpx.AsyncClient, platform: Platform, token: str, channel_id: str,
                       content: str) -> str:
    status, data = await _exchange(client, "POST", f"{platform.api_url}/channels/{channel_id}/messages",
                                   headers={"authorization": f"Bot {token}"},
                                   json={"content": content, "allowed_mentions": {"parse": []}})
    if 200 <= status < 300 and isinstance(data, dict):
        return str(data.get("id", ""))
    raise _discord_error(status, data, token)


async def discord_channel(client: httpx.AsyncClient, platform: Platform, token: str,
                          channel_id: str) -> dict[str, Any]:
    status, data = await _exchange(client, "GET", f"{platform.api_url}/channels/{channel_id}",
                                   headers={"authorization": f"Bot {token}"})
    if 200 <= status < 300 and isinstance(data, dict):
        return {"title": data.get("name") or "", "type": data.get("type")}
    raise _discord_error(status, data, token)
