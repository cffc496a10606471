"""`subagents` and `background_subagents` against the mock provider: slot contention (the 4th leg waits
for one of 3 to end), the result header and the report file, a background leg's report reaching the
caller's next turn, and every refusal."""

from __future__ import annotations

from tests.agent import chat_replies as chat
from tests.agent.delegation.support import Router, answer, call, calls, model, requests_of, tool_messages
from tests.agent.mock_provider import MockProvider, Reply
from tests.conftest import MakeRuntime
from tooldeck.agent.events import AgentEvent
from tooldeck.catalog.profile import DEFAULT_ALLOW
from tooldeck.records.store import SqliteRecorder

CHARTER = "# Subagent Charter"
SUBAGENTS = ["builtin:subagents", "builtin:background.subagents"]
LEG_DELAY = 0.3  # seconds before each chunk of the first three legs' answers (5 chunks: 1.5 s)


def leg(cid: str, task: str, **more: object) -> tuple[str, str, str]:
    return call(cid, "subagents", {"task": task, "model": "mock", **more})


async def test_the_fourth_leg_waits_for_a_slot(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *SUBAGENTS])
    router = Router(mock_provider)
    router.on("PARENT", calls(leg("l1", "leg one", report_name="First Leg"), leg("l2", "leg two"),
                              leg("l3", "leg three"), leg("l4", "leg four", exclude_tools=["dice_roll"])),
              answer("All four reported."))
    for name in ("one", "two", "three"):
        router.on(CHARTER, chat.stream(f"findings of leg {name}", use=chat.usage(30, 7, cached=4),
                                       delay=LEG_DELAY), user=f"leg {name}")
    router.on(CHARTER, answer("findings of leg four"), user="leg four")
    events: list[AgentEvent] = []

    result = await rt.agent(model(mock_provider), instructions="PARENT", on_event=events.append).run("Fan out.")

    assert result.ok and result.text == "All four reported."
    first_three = [mock_provider.requests[router.numbers(CHARTER, f"leg {n}")[0] - 1]
                   for n in ("one", "two", "three")]
    [fourth] = requests_of(mock_provider, router, CHARTER, "leg four")
    # the fourth leg's request came after the three others, and only once one of them had ended
    assert fourth.number > max(r.number for r in first_three)
    assert fourth.at - min(r.at for r in first_three) >= 4 * LEG_DELAY
    waiting = [e.data for e in events if e.kind == "subagent_waiting"]
    assert [w["leg_id"] for w in waiting] == ["leg_l4"]
    assert waiting[0]["text"] == "waiting for a subagent slot: 3 legs are running"

    # what a leg sees: the charter, its task, fewer tools (the caller's exclude_tools too)
    tools = {t["function"]["name"] for t in fourth.json["tools"]}
    assert "workspace_read_file" in tools
    assert not {"dice_roll", "workspace_write_file", "workspace_apply_patch", "subagents", "workspace_commit",
                "workspace_finish"} & tools
    assert fourth.json["messages"][0]["content"].startswith(CHARTER)
    assert fourth.json["messages"][1] == {"role": "user", "content": "leg four"}

    reports = tool_messages(requests_of(mock_provider, router, "PARENT")[1])
    first = reports["l1"].splitlines()
    assert first[0].startswith("[subagent · mock · session=tmp-") and \
        first[0].endswith(" · usage: in=30 out=7 cached=4 write=0]")
    assert first[1] == "report: summaries/subagent-first-leg.md"
    assert first[2] == ("The leg's full report is in that file — read it with workspace_read_file before relaying "
                        "or synthesizing.")
    workspace = rt.home / "workspaces" / result.run_id
    assert (workspace / "summaries" / "subagent-first-leg.md").read_text() == "findings of leg one"
    path4 = reports["l4"].splitlines()[1].removeprefix("report: ")
    assert (workspace / path4).read_text() == "findings of leg four"
    # each leg's usage is in the caller's records
    legs = [e for e in rt.recorder.run_events(result.run_id, "agent") if e["type"] == "subagent_leg"]
    assert len(legs) == 4 and all(e["status"] == "completed" for e in legs)
    assert sorted(e["usage"]["input_tokens"] for e in legs) == [10, 30, 30, 30]
    child = rt.recorder.run_events(legs[0]["run_id"], "agent")
    assert child[0]["parent_run_id"] == result.run_id and child[0]["mode"] == "subagent"


async def test_a_background_leg_reports_on_the_next_turn(make_runtime: MakeRuntime,
                                                         mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *SUBAGENTS])
    router = Router(mock_provider)
    router.on("PARENT", calls(call("b1", "background_subagents", {"task": "bg job", "model": "mock",
                                                                   "report_name": "bg"})),
              answer("Waiting for the leg."),
              answer("The leg reported."))
    router.on(CHARTER, chat.stream("background findings", delay=0.2), user="bg job")

    result = await rt.agent(model(mock_provider), instructions="PARENT", background_wait=30).run("Start it.")

    assert result.ok and result.text == "The leg reported." and result.turns == 3
    parent = requests_of(mock_provider, router, "PARENT")
    started = tool_messages(parent[1])["b1"]
    assert started.startswith("Started subagent leg sub_") and "in the background (mock)" in started
    leg_id = started.split()[3]
    last = parent[2].json["messages"][-1]
    assert last["role"] == "user"
    assert last["content"].startswith(f"[background report {leg_id}]\nsubagent leg {leg_id} finished.\n"
                                      "[subagent · mock · session=tmp-")
    assert "report: summaries/subagent-bg.md" in last["content"]
    assert (rt.home / "workspaces" / result.run_id / "summaries" / "subagent-bg.md").read_text() == \
        "background findings"
    # a headless run has no background legs
    headless = rt.invocation("openai", headless=True)
    assert "background_subagents" not in headless.call_names() and "subagents" in headless.call_names()


async def test_every_refusal_and_the_sessions(make_runtime: MakeRuntime, mock_provider: MockProvider) -> None:
    rt = make_runtime(allow=[*DEFAULT_ALLOW, *SUBAGENTS])
    router = Router(mock_provider)
    router.on("PARENT",
              calls(call("s1", "subagents", {"mode": "fan"}), call("s2", "subagents", {"mode": "invoke"}),
                    call("s3", "subagents", {"task": "t", "model": "gpt-nope"}),
                    call("s4", "subagents", {}), leg("s5", "failing leg"), leg("s6", "silent leg"),
                    leg("s7", "scouting leg", name="scout", system_prompt="You scout the terrain.")),
              calls(call("s8", "subagents", {"mode": "list"}), leg("s9", "second scouting", name="scout")),
              answer("done"))
    router.on(CHARTER, Reply.error(400, {"error": {"message": "model overloaded"}}), user="failing leg")
    router.on(CHARTER, answer(""), user="silent leg")
    router.on(CHARTER, answer("terrain mapped"), user="scouting leg")
    router.on(CHARTER, answer("terrain mapped again"), user="second scouting")

    result = await rt.agent(model(mock_provider), instructions="PARENT").run("go")

    assert result.ok
    store = rt.recorder
    assert isinstance(store, SqliteRecorder)
    got = {c.call_id: c.result for i in result.invocation_ids for c in store.history(i).calls if c.result}
    expected = {
        "s1": ("subagent.unknown_mode", 'unknown mode "fan"; available: invoke, list'),
        "s2": ("subagent.field_required", "task is required when mode=invoke"),
        "s3": ("subagent.model_invalid", 'model "gpt-nope" is not registered and cannot run a subagent leg; '
                                         "available: mock"),
        "s4": (None, "No named subagent sessions."),
        "s5": ("subagent.failed", "subagent mock failed: "),
        "s6": ("subagent.empty", "subagent mock finished without producing any text (in=10 out=5 cached=0 "
                                 "write=0). Re-dispatch this leg"),
        "s7": (None, "[subagent · mock · session=ses_"),
        "s8": (None, "- scout (session=ses_"),
        "s9": (None, "[subagent · mock · session=ses_"),
    }
    for cid, (code, text) in expected.items():
        assert got[cid].error_code == code, (cid, got[cid].content)
        assert text in got[cid].content, (cid, got[cid].content)
    assert "model overloaded" in got["s5"].content
    assert "Re-dispatch this leg with a model other than mock; the rest of the fan-out is unaffected." in \
        got["s5"].content
    session = got["s7"].content.split("session=")[1].split(" ")[0]
    assert f"session={session}" in got["s9"].content and "You scout the terrain." in got["s8"].content
    [scout2] = requests_of(mock_provider, router, CHARTER, "second scouting")
    assert scout2.json["messages"][0]["content"].endswith("You scout the terrain.")  # the session's role
    # outside a run of the agent loop
    inv = rt.invocation("openai")
    [outside] = await inv.arun([{"id": "o", "name": "subagents", "arguments": '{"mode": "list"}'}])
    assert outside.error_code == "subagent.unavailable"
