"""ask_user in the library: the host's answerer, every question kind, secrets kept out of the records and the
host's events, Agenvoy's argument errors, and when the tool is offered at all."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tests.agent import chat_replies as chat
from tests.agent.mock_provider import MockProvider
from tests.agent.test_loop import model, tool_messages
from tests.builtins.fixed_set.support import call, names, state
from tests.conftest import MakeRuntime
from tooldeck.agent.events import AgentEvent
from tooldeck.builtins import ask_user as au
from tooldeck.builtins.ask_user_elicit import elicit_answerer, form_schema
from tooldeck.core.errors import ToolCallError

SECRET = "hunter2-very-secret-token"


def hosted(make_runtime: MakeRuntime, answerer: Any, **profile: Any) -> tooldeck.Runtime:
    """A runtime whose default answerer (`Runtime(ask_user=...)`) is `answerer`."""
    rt = make_runtime(**profile)
    rt.ask_user = answerer
    return rt


class Host:
    """An answerer that records what it was asked and answers from a list (or declines with None)."""

    def __init__(self, answers: list[Any] | None) -> None:
        self.answers = answers
        self.asked: list[au.AskRequest] = []

    async def __call__(self, request: au.AskRequest) -> list[Any] | None:
        self.asked.append(request)
        await asyncio.sleep(0)
        return self.answers


QUESTIONS = [
    {"question": "Which city?", "detail": "Both have flights on Friday.", "options": ["Paris", "Rome", "Paris"]},
    {"question": "Extras?", "options": ["hotel", "car", "guide"], "multi_select": True},
    {"question": "Any note?"},
    {"question": "API token?", "secret": True},
]


def test_the_host_answers_every_kind_of_question(make_runtime: MakeRuntime) -> None:
    host = Host(["Rome", ["car", "hotel"], "window seat", SECRET])
    rt = hosted(make_runtime, host)
    inv = rt.invocation()
    result = call(inv, "ask_user", {"questions": QUESTIONS, "state": state()})
    assert not result.is_error
    assert result.structured == {"answers": ["Rome", ["car", "hotel"], "window seat", SECRET]}
    assert result.content == f'{{"answers":["Rome",["car","hotel"],"window seat","{SECRET}"]}}'  # the model's
    [request] = host.asked
    assert request.call_id == "c1"
    assert [q.kind for q in request.questions] == ["single", "multi", "text", "secret"]
    assert request.questions[0].options == ("Paris", "Rome") and request.questions[0].detail == \
        "Both have flights on Friday."
    assert request.state == au.AskState("Plan the trip", ("Read the brief",), ("Book it",))


def test_a_secret_answer_never_reaches_the_records_in_clear(make_runtime: MakeRuntime) -> None:
    rt = hosted(make_runtime, Host(["Rome", ["car"], "note", SECRET]), result_inline_limit=10)
    inv = rt.invocation()
    result = call(inv, "ask_user", {"questions": QUESTIONS, "state": state()})
    assert SECRET in result.content  # the model gets it, inline although over the spill limit
    [record] = rt.recorder.history(inv.id).calls  # type: ignore[attr-defined]
    assert record.result.structured == {"answers": ["Rome", ["car"], "note", au.SECRET_MASK]}
    assert SECRET not in record.result.content and record.result.raw_result is None
    rt.recorder.close()
    home = rt.home
    for path in [home / "records.sqlite", *home.rglob("*")]:
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert not list(home.rglob("tool-results/*"))  # never spilled


async def test_the_model_gets_the_secret_the_host_event_a_mask(make_runtime: MakeRuntime,
                                                               mock_provider: MockProvider) -> None:
    args = '{"questions": [{"question": "Token?", "secret": true}], "state": {"objective": "Deploy", ' \
           '"completed": [], "next_steps": ["Use the token"]}}'
    mock_provider.script(chat.stream(calls=[("a1", "ask_user", args)]), chat.stream("Deployed."))
    events: list[AgentEvent] = []
    rt = make_runtime()
    result = await rt.agent(model(mock_provider), on_event=events.append, ask_user=Host([SECRET])).run("Deploy.")
    assert result.ok
    assert tool_messages(mock_provider.requests[1])[0]["content"] == f'{{"answers":["{SECRET}"]}}'
    [shown] = [e.data["content"] for e in events if e.kind == "tool_result"]
    assert shown == f'{{"answers":["{au.SECRET_MASK}"]}}'
    rt.recorder.close()
    assert SECRET.encode() not in (rt.home / "records.sqlite").read_bytes()


def test_declining_and_answers_that_do_not_fit(make_runtime: MakeRuntime) -> None:
    args = {"questions": QUESTIONS[:2], "state": state()}
    declined = call(hosted(make_runtime, Host(None)).invocation(), "ask_user", args)
    assert declined.error_code == au.DECLINED and declined.content.startswith("the user declined to answer.")
    for answers, expected in [(["Rome"], "the user's client gave 1 answer(s) for 2 question(s)"),
                              (["Oslo", ["car"]], "the answer to question #1 is not one of its options"),
                              (["Rome", ["boat"]], "the answer to question #2 is not a list of its options"),
                              ([3, ["car"]], "the answer to question #1 is not text")]:
        result = call(hosted(make_runtime, Host(answers)).invocation(), "ask_user", args)
        assert result.error_code == au.ANSWER_INVALID and result.content.startswith(expected), result.content


def test_an_answerer_that_cannot_reach_the_user(make_runtime: MakeRuntime) -> None:
    def unreachable(_request: au.AskRequest) -> None:
        raise ToolCallError(au.UNAVAILABLE, "the phone is off")

    result = call(hosted(make_runtime, unreachable).invocation(), "ask_user", {"questions": QUESTIONS[2:3],
                                                                               "state": state()})
    assert result.error_code == au.UNAVAILABLE and result.content == "the phone is off"


async def test_elicitation_outside_a_served_call_or_for_a_secret_is_unavailable() -> None:
    request = au.AskRequest("c1", (au.Question("Token?", secret=True),), au.AskState("x", (), ("y",)))
    with pytest.raises(ToolCallError, match="MCP specification forbids") as secret:
        await elicit_answerer(request)
    plain = au.AskRequest("c1", (au.Question("Name?"),), au.AskState("x", (), ("y",)))
    with pytest.raises(ToolCallError, match="no MCP client is in front of this call") as nobody:
        await elicit_answerer(plain)
    assert secret.value.code == nobody.value.code == au.UNAVAILABLE


@pytest.mark.parametrize(("args", "code", "message"), [
    ({"questions": [], "state": state()}, au.INVALID_QUESTIONS,
     "ask_user requires at least one question in 'questions'"),
    ({"questions": [{"question": "ok?"}, {"question": " "}], "state": state()}, au.INVALID_QUESTIONS,
     "question #2 is empty"),
    ({"questions": [{"question": "ok?"}], "state": state(objective=" ")}, au.STATE_REQUIRED,
     "state.objective is required for task resumption"),
    ({"questions": [{"question": "ok?"}], "state": state(next_steps=["", " "])}, au.STATE_REQUIRED,
     "state.next_steps is required for task resumption"),
])
def test_agenvoys_argument_errors_ask_nobody(make_runtime: MakeRuntime, args: dict[str, Any], code: str,
                                            message: str) -> None:
    host = Host(["x"])
    result = call(hosted(make_runtime, host).invocation(), "ask_user", args)
    assert result.error_code == code and result.content == message
    assert host.asked == []


def test_state_is_required_by_the_schema(make_runtime: MakeRuntime) -> None:
    result = call(hosted(make_runtime, Host(["x"])).invocation(), "ask_user", {"questions": [{"question": "ok?"}]})
    assert result.error_code == "tool.invalid_arguments" and "state" in result.content


def test_offered_only_with_an_answerer_and_never_by_default_in_a_headless_run(make_runtime: MakeRuntime) -> None:
    host = Host(["x"])
    assert "ask_user" not in names(make_runtime().invocation())
    rt = hosted(make_runtime, host)
    assert "ask_user" in names(rt.invocation())
    headless = rt.invocation(headless=True)
    assert "ask_user" not in names(headless)
    refused = call(headless, "ask_user", {"questions": [{"question": "ok?"}], "state": state()})
    assert refused.error_code == "tool.unknown_tool" and host.asked == []
    # a headless invocation given its own answerer (tooldeck serve's client) offers it
    assert "ask_user" in names(rt.invocation(headless=True, ask_user=host))
    assert "ask_user" in names(make_runtime().invocation(ask_user=host))


def test_the_elicitation_form_matches_the_questions() -> None:
    questions, _ = au.parse({"questions": QUESTIONS[:3], "state": state()})
    assert form_schema(questions) == {"type": "object", "required": ["q1", "q2", "q3"], "properties": {
        "q1": {"type": "string", "enum": ["Paris", "Rome"], "title": "Which city?",
               "description": "Both have flights on Friday."},
        "q2": {"type": "array", "items": {"type": "string", "enum": ["hotel", "car", "guide"]}, "title": "Extras?"},
        "q3": {"type": "string", "title": "Any note?"}}}


texts = st.text(max_size=12)
question = st.fixed_dictionaries({"question": texts}, optional={
    "detail": texts, "options": st.lists(texts, max_size=4), "multi_select": st.booleans(), "secret": st.booleans()})
ask_args = st.fixed_dictionaries({"questions": st.lists(question, max_size=4), "state": st.fixed_dictionaries({
    "objective": texts, "completed": st.lists(texts, max_size=2), "next_steps": st.lists(texts, max_size=2)})})


@settings(derandomize=True, max_examples=300, deadline=None)
@given(ask_args)
def test_decoding_any_arguments_gives_checked_questions_or_agenvoys_error(args: dict[str, Any]) -> None:
    try:
        questions, ask_state = au.parse(args)
    except ToolCallError as exc:
        assert exc.code in (au.INVALID_QUESTIONS, au.STATE_REQUIRED)
        return
    assert len(questions) == len(args["questions"]) >= 1 and ask_state.objective.strip() and ask_state.next_steps
    for q, src in zip(questions, args["questions"], strict=True):
        assert q.question == src["question"].strip() != ""
        assert len(set(q.options)) == len(q.options) and all(o.strip() == o != "" for o in q.options)
        assert not (q.secret and q.options) and not (q.multi_select and not q.options)
    form = form_schema(questions)
    assert form["required"] == [f"q{i}" for i in range(1, len(questions) + 1)]


async def test_a_question_that_times_out_stops_waiting(make_runtime: MakeRuntime) -> None:
    """The Profile's timeout applies; the answerer is cancelled, and the terminal prompt stops reading: a line
    typed after the timeout goes to the next question, not to the abandoned one."""
    import io
    import os

    from tooldeck.cli.ask_prompt import TerminalAnswerer

    read_end, write_end = os.pipe()
    stdin = os.fdopen(read_end, "r")
    err = io.StringIO()
    rt = hosted(make_runtime, TerminalAnswerer(stdin=stdin, err=err), tool_timeouts={"builtin:ask_user": 0.3})
    ask = {"id": "a1", "name": "ask_user", "arguments": {"questions": [{"question": "Name?"}], "state": state()}}
    try:
        [timed_out] = await rt.invocation(run_id="r").arun([ask])
        assert timed_out.error_code == "tool.timeout"
        os.write(write_end, b"Ada\n")
        [answered] = await rt.invocation(run_id="r").arun([{**ask, "id": "a2"}])
        assert answered.structured == {"answers": ["Ada"]}
        assert err.getvalue().count("[?] Name?") == 2

        cancelled: list[str] = []

        async def never(_request: au.AskRequest) -> None:
            try:
                await asyncio.Event().wait()
            finally:
                cancelled.append("stopped")

        rt.ask_user = never
        [again] = await rt.invocation(run_id="r").arun([{**ask, "id": "a3"}])
        assert again.error_code == "tool.timeout"
        for _ in range(500):  # poll with a generous deadline: the answerer was cancelled, not left running
            if cancelled:
                break
            await asyncio.sleep(0.01)
        assert cancelled == ["stopped"]
    finally:
        os.close(write_end)
        stdin.close()
