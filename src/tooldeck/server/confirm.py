"""`ask` permission over MCP: ask the client's user through elicitation, when the client can be asked.

The question is a form with a boolean field, `approve`, and an optional `remember` (`once` (default) | `run` |
`always`): only an `accept` with `approve: true` runs the call; with `remember` `run` or `always` the answer
(yes or no) is remembered for the session's run or for every run of the home (policy/approvals.py,
labelled `mcp:<client name>`), until `tooldeck approvals revoke`.

- Handshake era (2025-11-25 and older): an `elicitation/create` request to the client while the call waits.
- 2026-07-28 (no server-initiated requests): the call answers `InputRequiredResult` with the same form
  and a `requestState` bound to the tool name and arguments; the client asks its user and retries the
  call with the answer, which settles the confirmation of the retried call.

Every other case - no `elicitation` capability, a decline, a cancel, a transport error, an answer for
other arguments - is a denial, which the gate reports as `tool.permission_denied`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from typing import Any

import mcp_types as types
import orjson

from tooldeck.dispatch import Confirm, ConfirmationRequest
from tooldeck.policy.approvals import Approval

logger = logging.getLogger("tooldeck.serve")

CONFIRM_KEY = "tooldeck_confirm"
"""Key of the confirmation form in `inputRequests` / `inputResponses` (2026-07-28)."""

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run this tool call", "default": False},
        "remember": {"type": "string", "title": "Remember this answer", "enum": ["once", "run", "always"],
                     "default": "once",
                     "description": "once: this call only; run: this tool for the rest of this session's run; "
                                    "always: this tool in every run, until revoked"},
    },
    "required": ["approve"],
}
_REMEMBERED = ("run", "always")
_ARGS_SHOWN = 2_000
_SECRET = secrets.token_bytes(32)


def question(req: ConfirmationRequest) -> str:
    args = orjson.dumps(req.arguments, option=orjson.OPT_INDENT_2).decode()
    if len(args) > _ARGS_SHOWN:
        args = args[:_ARGS_SHOWN] + "\n…"
    return f"Allow the tool `{req.call_name}` ({req.tool_id}) to run with these arguments?\n\n{args}"


def approved(answer: types.ElicitResult) -> bool:
    return answer.action == "accept" and (answer.content or {}).get("approve") is True


def settled(answer: types.ElicitResult, session: Any) -> bool | Approval:
    """The form's answer for the gate: a bool for this call, or an `Approval` to remember (an accepted
    form whose `remember` is `run` or `always`; a decline or a cancel is never remembered)."""
    remember = (answer.content or {}).get("remember") if answer.action == "accept" else None
    if remember not in _REMEMBERED:
        return approved(answer)
    return Approval(remember, allow=approved(answer), by=client_label(session))


def client_label(session: Any) -> str:
    """`mcp:<clientInfo.name>`, who answered a confirmation form (`mcp:client` when the client gave no name)."""
    try:
        name = session.client_params.client_info.name
    except AttributeError:  # no initialize params (2026-07-28 without client info)
        name = None
    return f"mcp:{name}" if isinstance(name, str) and name.strip() else "mcp:client"


_ELICITATION = types.ClientCapabilities(elicitation=types.ElicitationCapability())


def declared_elicitation(session: Any) -> bool:
    try:
        return bool(session.check_client_capability(_ELICITATION))
    except Exception:  # a session shape we do not know: do not ask
        return False


def elicitation_confirm(session: Any, request_id: types.RequestId | None) -> Confirm | None:
    """Handshake era: a callback that asks through `session`, or None when the client cannot be asked."""
    if not (declared_elicitation(session) and getattr(session, "can_send_request", False)):
        return None

    async def confirm(req: ConfirmationRequest) -> bool | Approval:
        try:
            answer = await session.elicit_form(question(req), _SCHEMA, related_request_id=request_id)
        except Exception as exc:  # the client could not answer: the call is not run
            logger.warning("confirmation for %s failed: %s", req.call_name, exc)
            return False
        return settled(answer, session)

    return confirm


def call_state(name: str, arguments: Any) -> str:
    """The `requestState` that binds an answer to one tool name and argument set (this server process)."""
    body = orjson.dumps([name, arguments], option=orjson.OPT_SORT_KEYS)
    return hmac.new(_SECRET, body, hashlib.sha256).hexdigest()


class InputRequiredConfirm:
    """2026-07-28: settle `ask` from the retried call's answer, or note that the client must be asked."""

    def __init__(self, params: types.CallToolRequestParams, session: Any = None) -> None:
        self.session = session
        self.state = call_state(params.name, params.arguments)
        self.answer: types.ElicitResult | None = None
        self.pending: ConfirmationRequest | None = None
        responses = params.input_responses or {}
        answer = responses.get(CONFIRM_KEY)
        if params.request_state is not None and hmac.compare_digest(params.request_state, self.state) \
                and isinstance(answer, types.ElicitResult):
            self.answer = answer

    async def __call__(self, req: ConfirmationRequest) -> bool | Approval:
        if self.answer is not None:
            return settled(self.answer, self.session)
        self.pending = req
        return False

    def input_required(self) -> types.InputRequiredResult | None:
        """The question to return instead of the (refused) result, when one is pending."""
        if self.pending is None:
            return None
        ask = types.ElicitRequest(params=types.ElicitRequestFormParams(message=question(self.pending),
                                                                      requested_schema=_SCHEMA))
        return types.InputRequiredResult(input_requests={CONFIRM_KEY: ask}, request_state=self.state)


def handshake_confirm(session: Any, request_id: types.RequestId | None) -> Confirm:
    """`ask` settled by an `elicitation/create` request, built only when a call actually needs it."""

    async def confirm(req: ConfirmationRequest) -> bool | Approval:
        ask = elicitation_confirm(session, request_id)
        return ask is not None and await ask(req)

    return confirm
