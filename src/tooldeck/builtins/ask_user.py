"""`ask_user` (Agenvoy's tool of the same name): ask the user questions and wait for the answers.

Arguments (Agenvoy's): `questions[]` of `{question, detail?, options?, multi_select?, secret?}` and the
required `state {objective, completed[], next_steps[]}` (what the task is and where it stands, so the
host can show it beside the questions or keep it with a pending task). A question without options is
free text; with options it is a single choice, or several with `multi_select`; `secret` (free text
only, ignored with options) is answered without echo and kept out of the records.

Who answers: the invocation's answerer (`InvocationView.ask_user`), a host callback `AskUser`
given to `Runtime(ask_user=…)`, `rt.invocation(ask_user=…)` or `rt.agent(ask_user=…)`; `tooldeck run`
sets a terminal prompt (`cli/ask_prompt.py`), `tooldeck serve` an MCP elicitation to the client of the
call (`builtins/ask_user_elicit.py`). The tool is offered only when the invocation has an answerer
(`AvailabilityContext.can_ask`); a headless invocation never takes the Runtime's default answerer, so
in a headless run it is not registered unless that invocation was given one explicitly (serve does).

The answerer gets an `AskRequest` and returns one answer per question (a string, or a list of strings
for a multi-select), or None when the user declines (`ask_user.declined`). The result is Agenvoy's
`{"answers": [...]}`; the records (and the host's `tool_result` event) get the same with every secret
answer replaced by `SECRET_MASK` (`ToolOutput.redacted`). Errors, with Agenvoy's messages where it has
them: `ask_user requires at least one question in 'questions'`, `question #i is empty`
(`ask_user.invalid_questions`); `state.objective is required for task resumption`,
`state.next_steps is required for task resumption` (`ask_user.state_required`); an answer that does
not fit its question (`ask_user.answer_invalid`); nobody could be asked (`ask_user.unavailable`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Union

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import AvailabilityContext, ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

INVALID_QUESTIONS: Final = "ask_user.invalid_questions"
STATE_REQUIRED: Final = "ask_user.state_required"
DECLINED: Final = "ask_user.declined"
ANSWER_INVALID: Final = "ask_user.answer_invalid"
UNAVAILABLE: Final = "ask_user.unavailable"
SECRET_MASK: Final = "[secret answer: not recorded]"
MAX_QUESTIONS: Final = 20
MAX_OPTIONS: Final = 50
MAX_TEXT: Final = 4_000

Answer = Union[str, list[str]]  # noqa: UP007 - a runtime alias used in isinstance-free annotations


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    detail: str | None = None
    options: tuple[str, ...] = ()
    multi_select: bool = False
    """Only with options."""
    secret: bool = False
    """Only without options."""

    @property
    def kind(self) -> str:
        """`text`, `secret`, `single` or `multi`."""
        if self.options:
            return "multi" if self.multi_select else "single"
        return "secret" if self.secret else "text"


@dataclass(frozen=True, slots=True)
class AskState:
    objective: str
    completed: tuple[str, ...]
    next_steps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AskRequest:
    """What an answerer gets: the questions in order and the task's state."""

    call_id: str
    questions: tuple[Question, ...]
    state: AskState


AskUser = Callable[[AskRequest], "Awaitable[Sequence[Answer] | None] | Sequence[Answer] | None"]
"""The host's answerer: one answer per question (a list of options for a multi-select), or None to decline.
It may raise `ToolCallError(UNAVAILABLE, …)` when it cannot reach the user."""


def parse(args: dict[str, Any]) -> tuple[tuple[Question, ...], AskState]:
    """The checked questions and state, or the ToolCallError with Agenvoy's message."""
    items = args["questions"]
    if not items:
        raise ToolCallError(INVALID_QUESTIONS, "ask_user requires at least one question in 'questions'")
    state = args["state"]
    if not state["objective"].strip():
        raise ToolCallError(STATE_REQUIRED, "state.objective is required for task resumption")
    if not [s for s in state["next_steps"] if s.strip()]:
        raise ToolCallError(STATE_REQUIRED, "state.next_steps is required for task resumption")
    questions = []
    for i, item in enumerate(items, 1):
        text = item["question"].strip()
        if not text:
            raise ToolCallError(INVALID_QUESTIONS, f"question #{i} is empty")
        options = tuple(dict.fromkeys(o.strip() for o in item.get("options") or () if o.strip()))
        detail = (item.get("detail") or "").strip() or None
        questions.append(Question(text, detail, options, bool(options) and bool(item.get("multi_select")),
                                  not options and bool(item.get("secret"))))
    return tuple(questions), AskState(state["objective"].strip(), tuple(state["completed"]),
                                      tuple(s for s in state["next_steps"] if s.strip()))


def check_answers(questions: Sequence[Question], answers: Any) -> list[Answer]:
    """The answerer's answers, checked against their questions (`ask_user.answer_invalid` otherwise). A secret
    answer is never quoted in the message."""
    if not isinstance(answers, list | tuple) or len(answers) != len(questions):
        got = len(answers) if isinstance(answers, list | tuple) else type(answers).__name__
        raise ToolCallError(ANSWER_INVALID, f"the user's client gave {got} answer(s) for {len(questions)} "
                            "question(s); nothing usable came back. Ask again, or continue without the answers.")
    out: list[Answer] = []
    for i, (q, a) in enumerate(zip(questions, answers, strict=True), 1):
        kind = q.kind
        if kind == "multi":
            if not isinstance(a, list | tuple) or not all(isinstance(x, str) and x in q.options for x in a):
                raise ToolCallError(ANSWER_INVALID, f"the answer to question #{i} is not a list of its options "
                                    f"({', '.join(q.options)}): {a!r}. Ask again if you still need it.")
            out.append(list(dict.fromkeys(a)))
        elif not isinstance(a, str):
            raise ToolCallError(ANSWER_INVALID, f"the answer to question #{i} is not text. Ask again if you still "
                                "need it.")
        elif kind == "single" and a not in q.options:
            raise ToolCallError(ANSWER_INVALID, f"the answer to question #{i} is not one of its options "
                                f"({', '.join(q.options)}): {a!r}. Ask again if you still need it.")
        else:
            out.append(a)
    return out


def masked(questions: Sequence[Question], answers: Sequence[Answer]) -> list[Answer]:
    return [SECRET_MASK if q.secret else a for q, a in zip(questions, answers, strict=True)]


async def ask_user(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    questions, state = parse(args)
    answerer = ctx.invocation.ask_user
    if answerer is None:
        raise ToolCallError(UNAVAILABLE, "nobody can be asked in this run (no answerer); put the questions in your "
                            "answer text instead, and stop there.")
    got = answerer(AskRequest(ctx.call_id, questions, state))
    if inspect.isawaitable(got):
        got = await got
    if got is None:
        raise ToolCallError(DECLINED, "the user declined to answer. Do not ask the same again: continue with what "
                            "you know and say what you assumed, or finish and say what is missing.")
    answers = check_answers(questions, got)
    body = {"answers": answers}
    if not any(q.secret for q in questions):
        return ToolOutput(json_text(body), body)
    shown = {"answers": masked(questions, answers)}
    return ToolOutput(json_text(body), body, redacted=(json_text(shown), shown))


def has_answerer(ctx: AvailabilityContext) -> bool:
    """Offered only when the invocation has someone to ask (`AvailabilityContext.can_ask`)."""
    return ctx.can_ask


_TEXT = {"type": "string", "maxLength": MAX_TEXT}
_LIST = {"type": "array", "items": _TEXT, "maxItems": 50}

DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("ask_user"),
    title="Ask the user",
    description="Ask the user one or more questions and wait for the answers (`{\"answers\": [...]}`, one per "
                "question in order). Use it when the target is missing, the scope or spec is unclear, a time is "
                "ambiguous, or several approaches fit; never guess an answer instead. All questions in one call.",
    input_schema={
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "maxItems": MAX_QUESTIONS,
                "description": "Questions in order: free text (no options) or a choice (with options).",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {**_TEXT, "description": "The short question, e.g. `Which branch?`."},
                        "detail": {**_TEXT, "description": "Supporting context shown under it (what you found, "
                                                           "current values). Optional."},
                        "options": {"type": "array", "items": {"type": "string", "maxLength": 500},
                                    "maxItems": MAX_OPTIONS,
                                    "description": "Fixed choices; omit for free text."},
                        "multi_select": {"type": "boolean", "description": "With options: several may be chosen."},
                        "secret": {"type": "boolean", "description": "Free text only: a password, token or key; "
                                                                     "typed without echo, kept out of the records."},
                    },
                    "required": ["question"],
                    "additionalProperties": False,
                },
            },
            "state": {
                "type": "object",
                "description": "Where the task stands, so it can continue after the answers.",
                "properties": {
                    "objective": {**_TEXT, "description": "The user's request (verbatim or paraphrased)."},
                    "completed": {**_LIST, "description": "Steps already done, with their key results."},
                    "next_steps": {**_LIST, "description": "What you will do with the answers."},
                },
                "required": ["objective", "completed", "next_steps"],
                "additionalProperties": False,
            },
        },
        "required": ["questions", "state"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(control=True),
    available=has_answerer,
)

TOOLS = [BuiltinTool(DESCRIPTOR, ask_user)]
