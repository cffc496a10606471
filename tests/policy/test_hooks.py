"""Python pre- and post-call hooks (issue 19 item 4): allow, deny, rewrite (and a rewrite the schema refuses),
ask, context, timeout, crash, out-of-protocol answers, post-call hooks editing and annotating a result; with
records on (the general lane, the records file read back) and off (the one-call lane)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tooldeck
from tooldeck.policy.hooks import INVALID_OUTPUT, Hook, HookAnswer, HookCall, HookFailure, answer_from

ADD = "extension/t:add"


def make(make_runtime: Any, ran: list[dict[str, Any]], records: bool = True, **profile: Any) -> tooldeck.Runtime:
    rt = make_runtime(records=records, max_identical_calls=0, **profile)

    @rt.tool(extension_id="t")
    def add(a: int, b: int) -> int:
        ran.append({"a": a, "b": b})
        return a + b

    @rt.tool(extension_id="t")
    def fail(a: int) -> int:
        raise RuntimeError(f"broken {a}")

    return rt


def call(inv: Any, args: dict[str, Any], name: str = "add", call_id: str = "c1") -> Any:
    return inv.run([{"id": call_id, "name": name, "arguments": json.dumps(args)}])[0]


def records_of(rt: tooldeck.Runtime, inv: Any) -> Any:
    """The invocation's calls and events as the records store reads them back."""
    store: Any = rt.recorder
    return store.history(inv.id).calls, store.events(inv.id)


@pytest.fixture(params=[True, False], ids=["records", "no-records"])
def records(request: Any) -> bool:
    return bool(request.param)


def test_allow_runs_the_call_and_the_hook_sees_the_ids(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    seen: list[HookCall] = []
    rt.hooks.pre(ADD)(seen.append)  # returns None: allow, unchanged
    inv = rt.invocation(run_id="r1")
    result = call(inv, {"a": 1, "b": 2})
    assert (result.content, result.is_error, ran) == ("3", False, [{"a": 1, "b": 2}])
    assert [(c.event, c.tool_id, c.call_name, c.arguments, c.call_id, c.run_id, c.invocation_id) for c in seen] == [
        ("pre_call", ADD, "add", {"a": 1, "b": 2}, "c1", "r1", inv.id)]


def test_deny_refuses_and_nothing_runs(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre("extension/t:*")(lambda c: HookAnswer("deny", "adding is paused"))
    inv = rt.invocation()
    result = call(inv, {"a": 1, "b": 2})
    assert (result.is_error, result.error_code, ran) == (True, "hook.denied", [])
    assert "adding is paused" in result.content and "was not run" in result.content
    if records:
        calls, events = records_of(rt, inv)
        assert (calls[0].status, calls[0].result.error_code) == ("failed", "hook.denied")
        assert [e.data["decision"] for e in events if e.kind == "hook"] == ["deny"]


def test_rewrite_runs_the_new_arguments_and_the_records_keep_both(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre(ADD)(lambda c: {"arguments": {**c.arguments, "b": 40}})
    inv = rt.invocation()
    result = call(inv, {"a": 2, "b": 2})
    assert (result.content, ran) == ("42", [{"a": 2, "b": 40}])
    if records:
        calls, events = records_of(rt, inv)
        assert json.loads(calls[0].raw_arguments) == {"a": 2, "b": 2}  # what the model sent
        assert calls[0].arguments == {"a": 2, "b": 40}  # what ran
        assert [e.data["rewritten"] for e in events if e.kind == "hook"] == [True]


def test_a_rewrite_the_schema_refuses_is_not_run(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre(ADD)(lambda c: {"arguments": {"a": "two", "b": 2}})
    result = call(rt.invocation(), {"a": 2, "b": 2})
    assert (result.error_code, ran) == ("hook.invalid_arguments", [])
    assert "`a`" in result.content and "rewrote the arguments" in result.content


def test_rules_judge_the_rewritten_arguments(make_runtime: Any) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, rules=[{"tool": ADD, "match": {"/a": "666"}, "permission": "deny"}])
    rt.hooks.pre(ADD)(lambda c: {"arguments": {"a": 666, "b": 0}})
    result = call(rt.invocation(), {"a": 1, "b": 2})
    assert (result.error_code, ran) == ("tool.rule_denied", [])


def test_ask_goes_to_the_confirmation_with_the_final_arguments(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre(ADD)(lambda c: HookAnswer("ask", arguments={"a": 5, "b": 5}))
    asked: list[dict[str, Any]] = []
    refused = call(rt.invocation(), {"a": 1, "b": 1})  # no confirmation callback: denied, never allowed
    assert (refused.error_code, ran) == ("tool.permission_denied", [])
    no = call(rt.invocation(confirm=lambda req: asked.append(req.arguments) and False), {"a": 1, "b": 1})
    assert (no.error_code, ran) == ("tool.permission_denied", [])
    yes = call(rt.invocation(confirm=lambda req: asked.append(req.arguments) or True), {"a": 1, "b": 1})
    assert (yes.content, ran, asked) == ("10", [{"a": 5, "b": 5}], [{"a": 5, "b": 5}] * 2)


def test_a_hooks_allow_never_loosens_the_profile(make_runtime: Any) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, permissions={ADD: "ask"})
    rt.hooks.pre(ADD)(lambda c: HookAnswer("allow"))
    assert call(rt.invocation(), {"a": 1, "b": 1}).error_code == "tool.permission_denied"
    rt2 = make(make_runtime, ran, home="h2", permissions={ADD: "deny"})
    rt2.hooks.pre(ADD)(lambda c: HookAnswer("allow"))
    assert call(rt2.invocation(), {"a": 1, "b": 1}).error_code == "tool.permission_denied"
    assert ran == []


def test_context_is_appended_for_the_model(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre(ADD)(lambda c: {"context": "Note: sums are audited."})
    result = call(rt.invocation(), {"a": 1, "b": 1})
    assert result.content == "2\n\nNote: sums are audited."


def test_hooks_of_other_tools_do_not_run(make_runtime: Any) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran)
    rt.hooks.pre("builtin:*")(lambda c: HookAnswer("deny", "no"))
    assert call(rt.invocation(), {"a": 1, "b": 1}).content == "2"
    assert rt.invocation().gate.hooks is not None and ADD not in rt.invocation().gate.hooks


def test_an_async_hook_past_its_timeout_is_cancelled_and_the_call_refused(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    state: list[str] = []

    @rt.hooks.pre(ADD, timeout_s=0.2)
    async def slow(c: HookCall) -> None:
        state.append("started")
        try:
            await asyncio.sleep(30)
            state.append("finished")
        except asyncio.CancelledError:
            state.append("cancelled")
            raise

    result = call(rt.invocation(), {"a": 1, "b": 1})
    assert (result.error_code, ran, state) == ("hook.timeout", [], ["started", "cancelled"])
    assert "0.2 s" in result.content


def test_a_hook_that_raises_is_a_failure_result(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre(ADD)(lambda c: 1 / 0)
    result = call(rt.invocation(), {"a": 1, "b": 1})
    assert (result.error_code, ran) == ("hook.failed", [])
    assert "ZeroDivisionError" in result.content


@pytest.mark.parametrize("answer", [["allow"], {"decision": "maybe"}, {"args": {"a": 1}}, {"reason": 3},
                                    {"arguments": [1]}, HookAnswer("ask", result="x")])
def test_answers_out_of_protocol_are_refused(make_runtime: Any, answer: Any) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran)
    rt.hooks.post(ADD)(lambda c: answer)  # post: `ask` is not a post-call decision
    rt.hooks.pre(ADD)(lambda c: answer if not isinstance(answer, HookAnswer) else None)
    result = call(rt.invocation(), {"a": 1, "b": 1})
    assert result.error_code == INVALID_OUTPUT
    assert ran == ([] if not isinstance(answer, HookAnswer) else [{"a": 1, "b": 1}])


def test_post_call_hooks_edit_and_annotate_the_result(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    seen: list[HookCall] = []
    rt.hooks.post(ADD)(lambda c: seen.append(c) or {"result": f"sum={c.result}"})
    rt.hooks.post(ADD)(lambda c: {"context": "(checked)"})
    rt.hooks.post("extension/t:fail")(lambda c: seen.append(c) or {"context": "the tool is known to fail"})
    inv = rt.invocation()
    result = call(inv, {"a": 3, "b": 4})
    assert result.content == "sum=7\n\n(checked)" and not result.is_error
    failed = call(inv, {"a": 1}, name="fail", call_id="c2")
    assert failed.is_error and failed.error_code == "tool.execution_failed"
    assert failed.content.endswith("\n\nthe tool is known to fail")
    assert [(c.event, c.result, c.is_error, c.code) for c in seen] == [
        ("post_call", "7", False, None), ("post_call", "`fail` failed: RuntimeError: broken 1", True,
                                          "tool.execution_failed")]
    if records:
        calls, _ = records_of(rt, inv)
        assert calls[0].result.content == "sum=7\n\n(checked)"  # the records keep what the model got


def test_post_call_deny_and_failure_withhold_the_result(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.post(ADD)(lambda c: HookAnswer("deny", "sums over 10 are secret") if int(c.result) > 10 else
                       (1 / 0 if c.arguments["a"] == 0 else None))
    inv = rt.invocation()
    assert call(inv, {"a": 1, "b": 1}).content == "2"
    secret = call(inv, {"a": 9, "b": 9})
    assert (secret.error_code, "18" in secret.content, "ran, but" in secret.content) == ("hook.denied", False, True)
    crashed = call(inv, {"a": 0, "b": 1})
    assert crashed.error_code == "hook.failed" and "ZeroDivisionError" in crashed.content
    assert len(ran) == 3  # the tool ran each time: the hook only withheld results


def test_several_calls_in_one_turn_keep_their_order(make_runtime: Any, records: bool) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran, records)
    rt.hooks.pre(ADD)(lambda c: HookAnswer("deny", "odd") if c.arguments["a"] % 2 else None)
    inv = rt.invocation()
    out = inv.run([{"id": f"c{i}", "name": "add", "arguments": json.dumps({"a": i, "b": 0})} for i in range(4)])
    assert [(r.call_id, r.error_code or r.content) for r in out] == [
        ("c0", "0"), ("c1", "hook.denied"), ("c2", "2"), ("c3", "hook.denied")]
    if records:
        calls, _ = records_of(rt, inv)
        assert [(c.status, c.arguments) for c in calls] == [
            ("completed", {"a": 0, "b": 0}), ("failed", None), ("completed", {"a": 2, "b": 0}), ("failed", None)]
        assert all(c.raw_arguments for c in calls)


def test_hooks_given_to_the_runtime_and_to_one_invocation(make_runtime: Any, tmp_path: Path) -> None:
    ran: list[dict[str, Any]] = []
    deny = Hook.python("pre_call", lambda c: HookAnswer("deny", "runtime hook"), ADD)
    rt = tooldeck.Runtime(tmp_path / "h", records=False, hooks=[deny])
    try:
        rt.tool(extension_id="t", name="add")(lambda a, b: ran.append(a) or a + b)  # type: ignore[func-returns-value]
        assert call(rt.invocation(), {"a": 1, "b": 1}).error_code == "hook.denied"
        rt.hooks.remove(deny)
        only = Hook.python("pre_call", lambda c: HookAnswer("deny", "this invocation"), "*")
        assert call(rt.invocation(hooks=[only]), {"a": 1, "b": 1}).error_code == "hook.denied"
        assert call(rt.invocation(), {"a": 1, "b": 1}).content == "2"
        assert ran == [1]
    finally:
        rt.close()
    with pytest.raises(ValueError, match="pre_call"):
        Hook.python("before", lambda c: None)
    with pytest.raises(TypeError, match=r"Hook\.python"):
        tooldeck.Runtime(tmp_path / "h2", records=False, hooks=[lambda c: None])  # type: ignore[list-item]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4),
                     max_leaves=12)
_ANSWERS = st.fixed_dictionaries({}, optional={
    "decision": st.sampled_from(["allow", "deny", "ask", "block", 1]), "reason": st.text(max_size=5) | st.integers(),
    "arguments": st.dictionaries(st.text(max_size=3), st.integers(), max_size=2) | st.just([1]),
    "context": st.text(max_size=5), "result": st.text(max_size=5) | st.none(), "other": st.just(1)})


@settings(derandomize=True, max_examples=400, deadline=None)
@given(data=_JSON | _ANSWERS, event=st.sampled_from(["pre_call", "post_call"]))
def test_the_protocol_parser_answers_or_names_the_problem(data: Any, event: str) -> None:
    try:
        answer = answer_from(data, event)
    except HookFailure as failed:
        assert failed.code == INVALID_OUTPUT and failed.detail
        return
    assert isinstance(data, dict)
    assert answer.decision in (("allow", "deny", "ask") if event == "pre_call" else ("allow", "deny"))
    assert set(data) <= ({"decision", "reason", "arguments", "context"} if event == "pre_call" else
                         {"decision", "reason", "result", "context"})
    assert answer.arguments is None or isinstance(answer.arguments, dict)


def test_the_calls_are_in_the_records_while_their_pre_call_hooks_run(make_runtime: Any) -> None:
    ran: list[dict[str, Any]] = []
    rt = make(make_runtime, ran)
    during: list[Any] = []
    inv_ids: list[str] = []
    rt.hooks.pre(ADD)(lambda c: during.extend(
        (x.call_id, x.status, x.raw_arguments) for x in rt.recorder.history(inv_ids[0]).calls))  # type: ignore[attr-defined]
    inv = rt.invocation()
    inv_ids.append(inv.id)
    out = inv.run([{"id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
                   {"id": "c2", "name": "nope", "arguments": "{}"}])
    assert [r.error_code or r.content for r in out] == ["3", "tool.unknown_tool"]
    assert during == [("c1", "requested", '{"a": 1, "b": 2}'), ("c2", "requested", "{}")]
    assert [(c.status, c.arguments) for c in rt.recorder.history(inv.id).calls] == [  # type: ignore[attr-defined]
        ("completed", {"a": 1, "b": 2}), ("failed", None)]
