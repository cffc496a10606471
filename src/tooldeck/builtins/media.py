"""`generate_image` and `generate_audio` (Agenvoy's conditional media tools) on OpenAI-compatible endpoints.

Offered only when `[models]` of `<home>/tooldeck.toml` names a model for the job: `image = "<model>"`
(`POST {base_url}/images/generations`, or `/images/edits` with a reference image) and `tts = "<model>"`
(`POST {base_url}/audio/speech`). The model entry gives the endpoint, key (`${secret:NAME}` works) and
headers, as for chat models (agent/models.py). Requests go through the SSRF guard (a local server needs
`net_allow`). The file is saved under `output/` and its path returned, never the data; an existing file
is never replaced. The key is never in a result: upstream errors are quoted from their JSON `message`.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Final

from tooldeck.builtins.home_config import document, models_table
from tooldeck.builtins.media_files import audio_kind, file_name, image_kind, save_new, saved_answer
from tooldeck.builtins.net import http_errors, read_capped
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import workspace
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import AvailabilityContext, ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError, TooldeckError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput
from tooldeck.workspace.limits import MAX_FILE_BYTES

if TYPE_CHECKING:
    import httpx

    from tooldeck.agent.types import ModelConfig

OPENAI_BASE: Final = "https://api.openai.com/v1"
IMAGE_TIMEOUT_S: Final = 15 * 60.0
AUDIO_TIMEOUT_S: Final = 5 * 60.0
MAX_SPEECH_CHARS: Final = 4096
DEFAULT_VOICE: Final = "alloy"
NOT_CONFIGURED: Final = "media.not_configured"
FAILED: Final = "media.failed"
BAD_ANSWER: Final = "media.bad_answer"
BAD_REFERENCE: Final = "media.bad_reference"


def _has_model(role: str) -> Any:
    def configured(ctx: AvailabilityContext) -> bool:
        # the raw table only: asked on every invocation, this must not import the agent package (start-up)
        if ctx.home is None:
            return False
        models = document(ctx.home).get("models")
        return isinstance(models, dict) and isinstance(models.get(role), str)

    configured.__name__ = f"models_{role}_configured"  # what `tooldeck tools --all` names as the reason
    return configured


def _model(ctx: CallContext, role: str) -> ModelConfig:
    from tooldeck.agent.models import resolve_model

    home = ctx.run.home
    name = getattr(models_table(home), role) if home is not None else None
    if home is None or name is None:
        raise ToolCallError(NOT_CONFIGURED, f"no model is configured for this (models.{role} in tooldeck.toml).")
    try:
        config = resolve_model(home, name)
    except TooldeckError as exc:
        raise ToolCallError(NOT_CONFIGURED, f"models.{role}: {exc.message}") from None
    if config.provider not in ("openai", "openai_responses"):
        raise ToolCallError(NOT_CONFIGURED, f"models.{role} names {name!r}, a {config.provider} model; this tool "
                            "speaks the OpenAI-compatible media endpoints: configure a model with "
                            "provider = \"openai\".")
    return config


def _headers(config: ModelConfig) -> dict[str, str]:
    headers = dict(config.headers)
    if config.api_key:
        headers.setdefault("authorization", f"Bearer {config.api_key}")
    return headers


def _upstream_error(response: httpx.Response, body: bytes) -> str:
    import orjson

    try:
        data = orjson.loads(body)
        message = data["error"]["message"] if isinstance(data.get("error"), dict) else data.get("error") or data
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        message = body[:500].decode("utf-8", "replace")
    return f"the endpoint answered http {response.status_code}: {str(message).strip()[:500] or '(empty body)'}"


async def _post(ctx: CallContext, config: ModelConfig, path: str, timeout: float, cap: int,
                **request: Any) -> tuple[httpx.Response, bytes]:
    from tooldeck.net.clients import client_for

    url = f"{(config.base_url or OPENAI_BASE).rstrip('/')}/{path}"
    with http_errors(f"the {config.name} endpoint did not finish within {timeout:g} s; nothing was saved.",
                     lambda exc: f"the {config.name} endpoint could not be reached ({type(exc).__name__}); nothing "
                     "was saved."):
        client = client_for(ctx.run, ctx.invocation.profile.net_allow)
        async with client.stream("POST", url, headers=_headers(config), timeout=timeout, **request) as response:
            body, truncated = await read_capped(response, cap)
    if not response.is_success:
        raise ToolCallError(FAILED, _upstream_error(response, body) + "; nothing was saved.")
    if truncated:
        raise ToolCallError(BAD_ANSWER, f"the answer is larger than {cap // 1048576} MiB; nothing was saved.")
    return response, body


async def _image_bytes(ctx: CallContext, config: ModelConfig, body: bytes) -> bytes:
    import orjson

    try:
        item = orjson.loads(body)["data"][0]
    except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
        raise ToolCallError(BAD_ANSWER, "the images endpoint did not answer {data: [{b64_json | url}]}; nothing "
                            "was saved.") from None
    if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
        try:
            return base64.b64decode(item["b64_json"], validate=True)
        except ValueError:
            raise ToolCallError(BAD_ANSWER, "the image's b64_json is not base64; nothing was saved.") from None
    if isinstance(item, dict) and isinstance(item.get("url"), str):
        from tooldeck.net.clients import client_for
        from tooldeck.net.guard import check_url

        with http_errors(f"the generated image did not arrive within {IMAGE_TIMEOUT_S:g} s; nothing was saved.",
                         lambda exc: f"the generated image could not be fetched ({type(exc).__name__}); nothing was "
                         "saved."):
            client = client_for(ctx.run, ctx.invocation.profile.net_allow)
            async with client.stream("GET", check_url(item["url"]), timeout=IMAGE_TIMEOUT_S) as response:
                data, truncated = await read_capped(response, MAX_FILE_BYTES)
        if not response.is_success or truncated:
            raise ToolCallError(BAD_ANSWER, f"the generated image's URL answered http {response.status_code}"
                                f"{' with more than 64 MiB' if truncated else ''}; nothing was saved.")
        return data
    raise ToolCallError(BAD_ANSWER, "the images endpoint's answer has neither b64_json nor url; nothing was saved.")


async def generate_image(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    config = _model(ctx, "image")
    fields = {"model": config.model, "prompt": args["prompt"], "n": 1}
    for key in ("size", "quality"):
        if args.get(key):
            fields[key] = args[key]
    reference = args.get("reference_image")
    if reference:
        store, policy = workspace(ctx)
        data = store.read_if_exists(store.locate(policy, reference))
        kind = image_kind(data or b"")
        if data is None or kind is None:
            raise ToolCallError(BAD_REFERENCE, f"`{reference}` is not a PNG, JPEG, WebP or GIF file of the workspace.")
        image = (reference.rsplit("/", 1)[-1], data, f"image/{'jpeg' if kind == 'jpg' else kind}")
        _, body = await _post(ctx, config, "images/edits", IMAGE_TIMEOUT_S, 2 * MAX_FILE_BYTES,
                              data={k: str(v) for k, v in fields.items()}, files={"image": image})
    else:
        _, body = await _post(ctx, config, "images/generations", IMAGE_TIMEOUT_S, 2 * MAX_FILE_BYTES, json=fields)
    data = await _image_bytes(ctx, config, body)
    kind = image_kind(data)
    if kind is None:
        raise ToolCallError(BAD_ANSWER, "the endpoint's image is not PNG, JPEG, WebP or GIF; nothing was saved.")
    path, effect = await save_new(ctx, file_name(args.get("output_file"), "image", kind), data)
    answer = saved_answer(path, data, kind, model=config.model)
    return ToolOutput(json_text(answer), answer, resource_refs=[path], effects=[effect])


async def generate_audio(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    config = _model(ctx, "tts")
    text = args["text"]
    if not text.strip():
        raise ToolCallError(FAILED, "text is empty; give the exact words to speak.")
    request = {"model": config.model, "input": text, "voice": (args.get("voice") or "").strip() or DEFAULT_VOICE,
               "response_format": "opus"}
    if args.get("instructions"):
        request["instructions"] = args["instructions"]
    response, data = await _post(ctx, config, "audio/speech", AUDIO_TIMEOUT_S, MAX_FILE_BYTES, json=request)
    if not data:
        raise ToolCallError(BAD_ANSWER, "the speech endpoint answered with no audio; nothing was saved.")
    kind = audio_kind(response.headers.get("content-type", ""), data)
    path, effect = await save_new(ctx, file_name(args.get("output_file"), "audio", kind), data)
    answer = saved_answer(path, data, kind, voice=request["voice"])
    return ToolOutput(json_text(answer), answer, resource_refs=[path], effects=[effect])


IMAGE = ToolDescriptor(
    id=ToolId.builtin("generate_image"),
    title="Generate an image",
    description="Draw an image from a text prompt with the configured image model (or edit a workspace image "
                "given as reference_image) and save it under output/. Returns the saved path, not the image.",
    input_schema={
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 32000,
                       "description": "What to draw: subject, style, composition, text in the image."},
            "size": {"type": "string", "pattern": r"^(auto|\d{2,4}x\d{2,4})$", "description": "e.g. 1024x1024."},
            "quality": {"type": "string", "enum": ["auto", "low", "medium", "high", "standard", "hd"]},
            "reference_image": {"type": "string", "description": "A workspace image to edit or follow."},
            "output_file": {"type": "string", "description": "File name (folder dropped, extension set from the "
                            "image); default image-<timestamp>."},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
    available=_has_model("image"),
)

AUDIO = ToolDescriptor(
    id=ToolId.builtin("generate_audio"),
    title="Read text aloud",
    description="Speak text with the configured text-to-speech model and save the audio under output/ (Opus in "
                ".ogg when the endpoint gives it). Returns the saved path, not the audio. To transcribe a "
                "recording, read it instead; to draw, use generate_image.",
    input_schema={
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_SPEECH_CHARS,
                     "description": "Exactly the words to speak, as they should be read aloud."},
            "voice": {"type": "string", "description": "The provider's voice, e.g. alloy; blank: alloy."},
            "instructions": {"type": "string", "maxLength": 4000, "description": "Tone, pace, accent."},
            "output_file": {"type": "string", "description": "File name (folder dropped, extension set from the "
                            "audio); default audio-<timestamp>."},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True, concurrency_safe=True),
    available=_has_model("tts"),
)

TOOLS = [BuiltinTool(IMAGE, generate_image), BuiltinTool(AUDIO, generate_audio)]
