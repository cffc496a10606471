"""A named subagent session keeps its conversation: the next leg's request carries the earlier legs'
exchanges (task, answer), `new` starts it over, a temp leg has none, another runtime on the same home
(a later process) continues it, and a leg of another provider gets it in its own shape. The leg's
`reasoning` reaches the wire: `reasoning_effort` on Chat Completions (default low), an Anthropic
thinking budget; the caller's own requests carry none."""

from __future__ import annotations

import json
import threading
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.agent.delegation.support import Router, answer, call, calls, model, requests_of
from tests.agent.mock_provider import MockProvider, Reply, Request
from tests.agent.test_provider_anthropic import message as anthropic_message
from tests.agent.test_provider_anthropic import text as anthropic_text
from tests.conftest import MakeRuntime
from tooldeck.agent.delegation.sessions import Sessions
from tooldeck.agent.providers.reasoning import EFFORTS, THINKING_BUDGETS
from tooldeck.catalog.profile import DEFAULT_ALLOW

SUBAGENTS = ["builtin:subagents", "builtin:background.subagents"]
CHARTER_PREFIX = "# Subagent Charter"


def leg(cid: str, task: str, **more: object) -> tuple[str, str, str]:
    return call(cid, "subagents", {"task": task, "model": "mock", **more})


def conversation(request: Request) -> list[tuple[str, str]]:
    """A Chat request's messages after the system one, as (role, content)."""
    return [(m["role"], m["content"]) for m in request.json["messages"] if m["role"] != "system"]


async def test_a_named_session_continues_its_conversation(make_runtime: MakeRuntime,
                                                         mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *SUBAGENTS])
    router = Router(mock_provider)
    router.on("PARENT",
              calls(leg("a", "map the north", name="scout", system_prompt="You scout.")),
              calls(leg("b", "and the south?", name="scout", reasoning="high"), leg("t", "a temp errand")),
              calls(leg("c", "start over: the east", name="scout", new=True)),
              calls(leg("d", "what have you seen?", name="scout")),
              answer("done"))
    router.on(CHARTER_PREFIX, answer("north: hills"), user="map the north")
    router.on(CHARTER_PREFIX, answer("south: sea"), user="and the south?")
    router.on(CHARTER_PREFIX, answer("errand done"), user="a temp errand")
    router.on(CHARTER_PREFIX, answer("east: forest"), user="start over: the east")
    router.on(CHARTER_PREFIX, answer("the east only"), user="what have you seen?")

    result = await rt.agent(model(mock_provider), instructions="PARENT").run("Scout.")

    assert result.ok and result.text == "done"
    [first] = requests_of(mock_provider, router, CHARTER_PREFIX, "map the north")
    [second] = requests_of(mock_provider, router, CHARTER_PREFIX, "and the south?")
    [temp] = requests_of(mock_provider, router, CHARTER_PREFIX, "a temp errand")
    [fresh] = requests_of(mock_provider, router, CHARTER_PREFIX, "start over: the east")
    [after] = requests_of(mock_provider, router, CHARTER_PREFIX, "what have you seen?")
    assert conversation(first) == [("user", "map the north")]
    # the second leg's request carries the first leg's exchange, then its own task
    assert conversation(second) == [("user", "map the north"), ("assistant", "north: hills"),
                                    ("user", "and the south?")]
    assert second.json["messages"][0]["content"].endswith("You scout.")  # the role, as before
    assert conversation(temp) == [("user", "a temp errand")]
    # `new` ignores the past; the conversation then goes on from that leg
    assert conversation(fresh) == [("user", "start over: the east")]
    assert conversation(after) == [("user", "start over: the east"), ("assistant", "east: forest"),
                                   ("user", "what have you seen?")]

    # reasoning: the leg's effort (default low) on every leg request, none on the caller's
    assert second.json["reasoning_effort"] == "high"
    assert {r.json["reasoning_effort"] for r in (first, temp, fresh, after)} == {"low"}
    assert all("reasoning_effort" not in r.json for r in requests_of(mock_provider, router, "PARENT"))

    # the records: what each leg was given
    legs = {e["leg_id"]: e for e in rt.recorder.run_events(result.run_id, "agent") if e["type"] == "subagent_leg"}
    assert {k: (v["reasoning"], v["history_legs"]) for k, v in legs.items()} == {
        "leg_a": ("low", 0), "leg_b": ("high", 1), "leg_t": ("low", 0), "leg_c": ("low", 0), "leg_d": ("low", 1)}
    started = rt.recorder.run_events(legs["leg_b"]["run_id"], "agent")[0]
    assert started["history"] == [{"task": "map the north", "answer": "north: hills"}]

    # another runtime on the home (a later process) continues the same conversation
    mock_provider.always(None)
    router2 = Router(mock_provider)
    router2.on("PARENT", calls(leg("e", "anything new?", name="scout")), answer("ok"))
    router2.on(CHARTER_PREFIX, answer("nothing"), user="anything new?")
    rt2 = make_runtime(home=rt.home, allow=[*DEFAULT_ALLOW, *SUBAGENTS])
    assert (await rt2.agent(model(mock_provider), instructions="PARENT").run("Again.")).ok
    [later] = requests_of(mock_provider, router2, CHARTER_PREFIX, "anything new?")
    assert conversation(later) == [("user", "start over: the east"), ("assistant", "east: forest"),
                                   ("user", "what have you seen?"), ("assistant", "the east only"),
                                   ("user", "anything new?")]


async def test_a_failed_leg_adds_nothing_and_a_leg_of_another_provider_gets_the_past(
        make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *SUBAGENTS])
    (rt.home / "tooldeck.toml").write_text(
        f'[models.claude]\nprovider = "anthropic"\nmodel = "claude-mock"\nbase_url = "{mock_provider.url}"\n'
        'api_key = "sk-ant-test"\nmax_retries = 0\nmax_output_tokens = 1000\nstream = false\n', encoding="utf-8")
    router = Router(mock_provider)
    router.on("PARENT",
              calls(leg("a", "count the wells", name="survey", system_prompt="You survey.")),
              calls(leg("f", "count the bridges", name="survey")),
              calls(call("c", "subagents", {"task": "and the roads?", "model": "claude", "name": "survey",
                                            "reasoning": "medium"})),
              answer("done"))
    router.on(CHARTER_PREFIX, answer("3 wells"), user="count the wells")
    router.on(CHARTER_PREFIX, Reply.error(400, {"error": {"message": "bad"}}), user="count the bridges")
    anthropic: deque[Reply] = deque([Reply.json(anthropic_message([anthropic_text("2 roads")], "end_turn"))])
    lock = threading.Lock()

    def by_path(request: Request) -> Reply:
        if request.path == "/v1/messages":
            with lock:
                return anthropic.popleft()
        return router(request)

    mock_provider.always(by_path)

    result = await rt.agent(model(mock_provider), instructions="PARENT").run("Survey.")

    assert result.ok
    [claude] = [r for r in mock_provider.requests if r.path == "/v1/messages"]
    assert claude.json["system"].startswith(CHARTER_PREFIX)
    # the failed leg left nothing: the Anthropic leg sees the first exchange only, in Anthropic's shape
    assert claude.json["messages"] == [
        {"role": "user", "content": "count the wells"},
        {"role": "assistant", "content": [{"type": "text", "text": "3 wells"}]},
        {"role": "user", "content": "and the roads?"}]
    budget = THINKING_BUDGETS["medium"]
    assert claude.json["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert claude.json["max_tokens"] == 1000 + budget
    [session] = Sessions(rt.home).list()
    assert Sessions(rt.home).history(session.id) == [("count the wells", "3 wells"), ("and the roads?", "2 roads")]


def test_the_reasoning_input_is_one_of_three_efforts(make_runtime: MakeRuntime) -> None:
    """Any `reasoning` value: one of low | medium | high passes the gate (and, outside a run of the agent loop,
    meets `subagent.unavailable`); anything else is `tool.invalid_arguments`, and no session is touched."""
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *SUBAGENTS])

    @settings(derandomize=True, max_examples=60, deadline=None)
    @given(value=st.one_of(st.sampled_from(EFFORTS), st.text(max_size=12), st.integers(), st.booleans(),
                           st.lists(st.sampled_from(EFFORTS), max_size=2)))
    def check(value: object) -> None:
        arguments = json.dumps({"task": "t", "model": "mock", "name": "scout", "reasoning": value})
        [out] = rt.invocation("openai").run([{"id": "c", "name": "subagents", "arguments": arguments}])
        assert out.error_code == ("subagent.unavailable" if value in EFFORTS else "tool.invalid_arguments"), \
            (value, out.content)

    check()
    assert not (rt.home / "subagents").exists()
