"""Gemini `contents`: a model turn of `functionCall` parts (args as an object) answered by the next
user turn with exactly as many `functionResponse` parts, same names, same order.

Gemini responses may carry no call ids; decoding synthesises deterministic ones (kept in the
records and sent back on replay as `id`), never the function name.

Thought signatures: a `functionCall` part may carry a `thoughtSignature` beside the call (in the
same part, not inside `functionCall`); decoding keeps it as the call's provider data and replay
puts it back in the same part (Gemini 3 rejects a history whose current turn drops it). Provider
items of a turn are its other model parts (text, thought summaries, each with its own signature
when it had one), sent back before the function calls in the order the model sent them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from tooldeck.core.arguments import MISSING
from tooldeck.core.rawvalue import raw_form
from tooldeck.naming import RULES
from tooldeck.protocols.common import (
    DecodedCall,
    ReplayCall,
    ReplayTurn,
    Violation,
    clean_name,
    decoded,
    image_base64,
    image_label,
)
from tooldeck.protocols.ids import id_problem

FAMILY = "gemini"
CALL_KEYS = ("thoughtSignature",)
"""The keys of a call's provider data that go in its part, beside `functionCall`."""
_CALL_PARTS = ("functionCall", "functionResponse")


def item_problem(part: Mapping[str, Any]) -> str | None:
    """Why a model part cannot be sent back as it is, or None."""
    for key in _CALL_PARTS:
        if key in part:
            return f"a {key} part is not a provider item: pass tool calls as calls"
    signature = part.get("thoughtSignature", "")
    if "thoughtSignature" in part and (not isinstance(signature, str) or not signature):
        return "`thoughtSignature` must be the non-empty string the API sent; send it back unchanged"
    return None


def items(response: Any) -> list[dict[str, Any]]:
    """The provider items of a generateContent response (first candidate), a content or parts: the
    model parts that are not function calls (text, thoughts), verbatim, in order."""
    return [dict(p) for p in _parts(response)
            if isinstance(p, Mapping) and not any(key in p for key in _CALL_PARTS)]


def _call_part(c: ReplayCall, own: bool) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"id": c.id, "name": c.name, "args": c.arguments}}
    data = c.provider_data
    if own and data:
        for key in CALL_KEYS:
            if key in data:
                part[key] = data[key]
    return part


def render(turns: Sequence[ReplayTurn]) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    for turn in turns:
        own = turn.source == FAMILY
        parts: list[dict[str, Any]] = []
        if own and turn.items:
            parts.extend(dict(p) for p in turn.items if item_problem(p) is None)
        parts.extend(_call_part(c, own) for c in turn.calls)
        contents.append({"role": "model", "parts": parts})
        answers: list[dict[str, Any]] = [
            {"functionResponse": {"id": c.id, "name": c.name,
                                  "response": {"error": c.marked_text()} if c.is_error else {"output": c.content}}}
            for c in turn.calls]
        answers.extend(image_parts(turn.calls))
        contents.append({"role": "user", "parts": answers})
    return contents


def image_parts(calls: Sequence[ReplayCall]) -> list[dict[str, Any]]:
    """The results' images, after all the functionResponse parts of the user turn: a text part naming the call
    and the copy, then an `inlineData` part (base64), per image."""
    parts: list[dict[str, Any]] = []
    for c in calls:
        for n, image in enumerate(c.images, 1):
            parts.append({"text": image_label(c, n)})
            parts.append({"inlineData": {"mimeType": image.mime, "data": image_base64(image)}})
    return parts


def _parts(response: Any) -> list[Any]:
    if isinstance(response, Mapping):
        if isinstance(response.get("candidates"), list):
            cands = response["candidates"]
            response = cands[0].get("content") if cands and isinstance(cands[0], Mapping) else {}
        if isinstance(response, Mapping) and isinstance(response.get("content"), Mapping):
            response = response["content"]
        parts = response.get("parts") if isinstance(response, Mapping) else None
        return parts if isinstance(parts, list) else []
    return response if isinstance(response, list) else []


def synthesize_id(seed: str, index: int, name: str, args: Any) -> str:
    """A deterministic call id: the same response (and seed) always gives the same ids."""
    try:
        canonical = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # not plain JSON: its raw form (exact, and never raises, unlike repr of a huge int)
        canonical = str(raw_form(args))
    digest = hashlib.sha256(f"{seed}\x00{index}\x00{name}\x00{canonical}".encode("utf-8", "surrogatepass"))
    return "call_" + digest.hexdigest()[:24]


def decode(response: Any, id_seed: str = "") -> list[DecodedCall]:
    """The functionCall parts of a generateContent response (first candidate), a content, or parts.

    Pass `id_seed` (e.g. `f"{invocation_id}:{round}"`) so that identical calls in different turns get
    different synthesised ids."""
    out: list[DecodedCall] = []
    for i, part in enumerate(_parts(response)):
        fc = part.get("functionCall") if isinstance(part, Mapping) else None
        if not isinstance(fc, Mapping):
            continue
        where = f"parts[{i}] (functionCall)"
        name = clean_name(fc.get("name"), where)
        raw = fc.get("args", MISSING)
        call_id = fc.get("id")
        signature = part.get("thoughtSignature")
        data = {"thoughtSignature": signature} if isinstance(signature, str) and signature else None
        if isinstance(call_id, str) and call_id.strip() and call_id != name:
            out.append(decoded(call_id, name, raw, provider_data=data))
        else:
            out.append(decoded(synthesize_id(id_seed, len(out), name, None if raw is MISSING else raw), name, raw,
                               synthesized=True, provider_data=data))
    return out


def validate(contents: Sequence[Mapping[str, Any]]) -> list[Violation]:
    out: list[Violation] = []
    rule = RULES["gemini"]
    pending: list[tuple[str | None, str]] = []
    pending_path = ""
    for c_i, content in enumerate(contents):
        path = f"contents[{c_i}]"
        parts = [p for p in content.get("parts") or [] if isinstance(p, Mapping)]
        for p_i, part in enumerate(parts):
            if "thoughtSignature" not in part:
                continue
            signature = part["thoughtSignature"]
            if not isinstance(signature, str) or not signature:
                out.append(Violation("thought_signature_invalid", f"{path}.parts[{p_i}].thoughtSignature",
                                     "thoughtSignature must be the non-empty string the API sent"))
            if content.get("role") != "model":
                out.append(Violation("thought_signature_role", f"{path}.parts[{p_i}]",
                                     "thought signatures belong to the model turn's parts they came with"))
        for p_i, part in enumerate(parts):
            inline = part.get("inlineData")
            if "inlineData" in part and (not isinstance(inline, Mapping) or not isinstance(inline.get("data"), str)
                                         or not inline.get("data") or "/" not in str(inline.get("mimeType"))):
                out.append(Violation("image_invalid", f"{path}.parts[{p_i}].inlineData", "inlineData needs its "
                                     "`mimeType` (e.g. image/png) and its base64 `data`"))
        calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), Mapping)]
        responses = [p["functionResponse"] for p in parts if isinstance(p.get("functionResponse"), Mapping)]
        if pending:
            if len(responses) != len(pending):
                out.append(Violation("function_response_count", path, "Please ensure that the number of function "
                                     "response parts is equal to the number of function call parts of the function "
                                     f"call turn ({len(responses)} responses for {len(pending)} calls at "
                                     f"{pending_path})"))
            for r_i, (resp, (call_id, name)) in enumerate(zip(responses, pending, strict=False)):
                if resp.get("name") != name:
                    out.append(Violation("function_response_name", f"{path}.parts[{r_i}]",
                                         f"response name {resp.get('name')!r} does not match call {name!r}"))
                if call_id is not None and resp.get("id") != call_id:
                    out.append(Violation("function_response_id", f"{path}.parts[{r_i}]",
                                         f"response id {resp.get('id')!r} does not match call id {call_id!r}"))
                if not isinstance(resp.get("response"), dict):
                    out.append(Violation("function_response_invalid", f"{path}.parts[{r_i}].response",
                                         "response must be a JSON object"))
            pending = []
        elif responses:
            out.append(Violation("function_response_orphaned", path, "function responses without a preceding "
                                 "function call turn"))
        if calls and content.get("role") != "model":
            out.append(Violation("function_call_role", path, "function calls must be in a `model` turn"))
        if calls and c_i > 0 and contents[c_i - 1].get("role") != "user":
            out.append(Violation("function_call_turn_order", path, "a function call turn must come right after a "
                                 "user turn or a function response turn"))
        seen_ids: set[str] = set()
        for p_i, fc in enumerate(calls):
            name, call_id = fc.get("name"), fc.get("id")
            f_path = f"{path}.parts[{p_i}].functionCall"
            if not isinstance(name, str) or not rule.is_valid(name):
                out.append(Violation("call_name_invalid", f"{f_path}.name", f"{name!r} breaks the gemini name rule "
                                     "(charset, first character, length)"))
            if "args" in fc and not isinstance(fc["args"], dict):
                out.append(Violation("call_arguments_invalid", f"{f_path}.args", "args must be a JSON object"))
            if call_id is not None:
                problem = id_problem(call_id, "gemini", name if isinstance(name, str) else None)
                if problem:
                    out.append(Violation("call_id_invalid", f"{f_path}.id", problem))
                elif call_id in seen_ids:
                    out.append(Violation("call_id_duplicate", f"{f_path}.id", f"call id {call_id!r} is used twice"))
                if isinstance(call_id, str):
                    seen_ids.add(call_id)
            pending.append((call_id, name))
        pending_path = path
    if pending:
        out.append(Violation("function_response_count", f"contents[{len(contents)}]", "the history ends with "
                             f"{len(pending)} function calls and no function response turn"))
    return out
