"""`ask_user` answered by the MCP client of a `tooldeck serve` call, through form elicitation.

`tooldeck serve` gives its invocations `elicit_answerer`: the questions become one `elicitation/create`
form sent to the client whose `tools/call` is running (the call's `Peer`, `sources/mcp/callbacks.py`,
the same path upstream servers' requests take to that client, recorded the same way):

- free text → a string field; a single choice → a string with `enum`; a multi-select → an array of
  such strings (the 2025-11-25 form schema); `title` = the question, `description` = its detail;
  every field required;
- the message names the objective (`state.objective`);
- `accept` → the fields' values as the answers; `decline` / `cancel` → the user declined.

A client that speaks 2026-07-28 cannot be sent a request during a call; for it the served call is held
(`server/held_calls.py`): the form goes out as an `InputRequiredResult` of the call, and the client's
retry with its answer resumes `ask_user` where it waited. The peer decides which way the form travels,
so this module does not change between the two eras.

A secret question is refused (`ask_user.unavailable`) before anything is sent: the MCP specification
says servers must not request sensitive information through form elicitation. So is a call with no
client to ask (outside a served call, or a client without the `elicitation` capability).
"""

from __future__ import annotations

from typing import Any

from tooldeck.builtins.ask_user import UNAVAILABLE, Answer, AskRequest, Question
from tooldeck.core.errors import ToolCallError


def field_name(i: int) -> str:
    return f"q{i}"


def form_schema(questions: tuple[Question, ...]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for i, q in enumerate(questions, 1):
        if q.kind == "multi":
            prop: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": list(q.options)}}
        elif q.kind == "single":
            prop = {"type": "string", "enum": list(q.options)}
        else:
            prop = {"type": "string"}
        prop["title"] = q.question
        if q.detail:
            prop["description"] = q.detail
        properties[field_name(i)] = prop
    return {"type": "object", "properties": properties, "required": list(properties)}


def form_message(request: AskRequest) -> str:
    n = len(request.questions)
    return f"The assistant needs {'an answer' if n == 1 else f'{n} answers'} to continue: {request.state.objective}"


async def elicit_answerer(request: AskRequest) -> list[Answer] | None:
    """Ask the client of the current served call; None when the user declines or cancels."""
    if any(q.secret for q in request.questions):
        raise ToolCallError(UNAVAILABLE, "a secret cannot be asked through this MCP client: the MCP specification "
                            "forbids requesting sensitive information in a form. Ask the user to set it up outside "
                            "the conversation (an environment variable or a file) and say where you expect it.")
    import mcp_types as types

    from tooldeck.sources.mcp.callbacks import current

    peer = current()
    if peer is None:
        raise ToolCallError(UNAVAILABLE, "no MCP client is in front of this call, so nobody can be asked; put the "
                            "questions in your answer text instead.")
    params = types.ElicitRequestFormParams(message=form_message(request),
                                           requested_schema=form_schema(request.questions))
    answer = await peer.elicitation(params)
    if isinstance(answer, types.ErrorData):
        raise ToolCallError(UNAVAILABLE, f"the user could not be asked: {answer.message} Put the questions in your "
                            "answer text instead.")
    if answer.action != "accept":
        return None
    content = answer.content or {}
    return [content.get(field_name(i)) for i in range(1, len(request.questions) + 1)]  # type: ignore[misc]
