"""OpenTelemetry spans for tool calls (issue 13 item 6), read back with the SDK's in-memory exporter.

The global tracer provider can be set once per process, so the in-process tests put the SDK's provider
in the API's global for the test's duration (as OpenTelemetry's own test helpers do); the public
`set_tracer_provider` route and a process without OpenTelemetry run in subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import tooldeck
from tests.core.helpers import builtin
from tooldeck import tracing

SECRET = "s3cret-argument-value"


@pytest.fixture
def exporter(monkeypatch):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield memory
    provider.shutdown()


def runtime(tmp_path, **profile):
    def host_fault(args, ctx):
        raise OSError("disk gone")

    rt = tooldeck.Runtime(tmp_path, builtins=[builtin("disk", host_fault)], records=False,
                          profile={"allow": ["extension/*", "builtin:disk"], **profile})

    @rt.tool(extension_id="ext")
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @rt.tool(extension_id="ext")
    def fails(text: str) -> str:
        """Raises with its argument in the message."""
        raise ValueError(f"cannot handle {text}")

    @rt.tool(extension_id="ext")
    async def nested(tag: str) -> str:
        """Opens a span of its own."""
        await asyncio.sleep(0)
        with trace.get_tracer("tool").start_as_current_span(f"inner {tag}"):
            await asyncio.sleep(0)
        return tag

    @rt.tool(extension_id="ext")
    def nested_sync(tag: str) -> str:
        """Opens a span of its own, on a worker thread."""
        with trace.get_tracer("tool").start_as_current_span(f"inner {tag}"):
            return threading.current_thread().name

    @rt.tool(extension_id="ext")
    async def hang() -> str:
        """Never finishes."""
        await asyncio.sleep(60)
        return "never"

    return rt


def attrs(span) -> dict:
    return dict(span.attributes)


def by_name(exporter, name):
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_a_call_is_an_execute_tool_span_with_the_semantic_convention_attributes(tmp_path, exporter):
    rt = runtime(tmp_path)
    inv = rt.invocation()
    with trace.get_tracer("agent").start_as_current_span("agent turn") as parent:
        result = inv.run([{"id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'}])[0]
    assert result.content == "3"
    (span,) = by_name(exporter, "execute_tool add")
    assert span.kind is SpanKind.INTERNAL
    assert attrs(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "tooldeck.tool.id": "extension/ext:add",
        "tooldeck.invocation.id": inv.id,
        "tooldeck.round": 1,
    }
    assert span.status.status_code is StatusCode.UNSET
    assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
    rt.close()


def test_failures_carry_the_error_code_and_no_argument_values(tmp_path, exporter):
    rt = runtime(tmp_path)
    inv = rt.invocation()
    results = inv.run([
        {"id": "c1", "name": "fails", "arguments": {"text": SECRET}},
        {"id": "c2", "name": "no_such_tool", "arguments": {"text": SECRET}},
        {"id": "c3", "name": "add", "arguments": {"a": SECRET}},
    ])
    assert [r.error_code for r in results] == ["tool.execution_failed", "tool.unknown_tool", "tool.invalid_arguments"]
    spans = {attrs(s)["gen_ai.tool.call.id"]: s for s in exporter.get_finished_spans()}
    assert {k: attrs(s)["error.type"] for k, s in spans.items()} == {
        "c1": "tool.execution_failed", "c2": "tool.unknown_tool", "c3": "tool.invalid_arguments"}
    assert spans["c2"].name == "execute_tool no_such_tool" and "tooldeck.tool.id" not in attrs(spans["c2"])
    for span in spans.values():
        assert span.status.status_code is StatusCode.ERROR
        assert SECRET not in repr(attrs(span)) + repr(span.events) + str(span.status.description)
    rt.close()


def test_trace_content_puts_the_arguments_and_the_result_on_the_span(tmp_path, exporter):
    rt = runtime(tmp_path, trace_content=True)
    rt.invocation().run([{"id": "c1", "name": "add", "arguments": '{"a": 40, "b": 2}'},
                         {"id": "c2", "name": "fails", "arguments": {"text": SECRET}}])
    spans = {attrs(s)["gen_ai.tool.call.id"]: attrs(s) for s in exporter.get_finished_spans()}
    assert spans["c1"]["gen_ai.tool.call.arguments"] == '{"a": 40, "b": 2}'  # what the model sent, verbatim
    assert spans["c1"]["gen_ai.tool.call.result"] == "42"
    assert json.loads(spans["c2"]["gen_ai.tool.call.arguments"]) == {"text": SECRET}
    assert SECRET in spans["c2"]["gen_ai.tool.call.result"]
    rt.close()


def test_the_tools_own_spans_nest_under_their_call_also_when_calls_run_together_or_on_threads(tmp_path, exporter):
    rt = runtime(tmp_path)
    rt.invocation().run([{"id": f"c{i}", "name": "nested", "arguments": {"tag": f"t{i}"}} for i in range(3)]
                        + [{"id": "s", "name": "nested_sync", "arguments": {"tag": "sync"}}])
    finished = exporter.get_finished_spans()
    calls = {attrs(s)["gen_ai.tool.call.id"]: s for s in finished if s.name.startswith("execute_tool")}
    assert len(calls) == 4
    for tag, call_id in [("t0", "c0"), ("t1", "c1"), ("t2", "c2"), ("sync", "s")]:
        (inner,) = [s for s in finished if s.name == f"inner {tag}"]
        assert inner.parent.span_id == calls[call_id].context.span_id
    rt.close()


def test_a_timeout_a_host_fault_and_a_cancellation_end_their_spans_with_an_error_type(tmp_path, exporter):
    rt = runtime(tmp_path, tool_timeouts={"extension/ext:hang": 0.05})
    inv = rt.invocation()
    assert inv.run([{"id": "t", "name": "hang", "arguments": {}}])[0].error_code == "tool.timeout"
    with pytest.raises(OSError):
        inv.run([{"id": "h", "name": "disk", "arguments": {}}])

    rt2 = runtime(tmp_path / "cancel")
    inv2 = rt2.invocation()

    async def cancelled() -> None:
        task = asyncio.ensure_future(inv2.arun([{"id": "x", "name": "hang", "arguments": {}}]))
        for _ in range(5):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    spans = {attrs(s)["gen_ai.tool.call.id"]: s for s in exporter.get_finished_spans()}
    assert attrs(spans["t"])["error.type"] == "tool.timeout"
    assert attrs(spans["h"])["error.type"] == "tool.host_fault"
    assert attrs(spans["h"])["gen_ai.tool.type"] == "function"
    assert [e.name for e in spans["h"].events] == ["exception"]
    assert attrs(spans["x"])["error.type"] == "asyncio.exceptions.CancelledError"
    assert all(s.status.status_code is StatusCode.ERROR for s in spans.values())
    rt.close()
    rt2.close()


def test_no_spans_and_the_untraced_path_without_a_provider(tmp_path, exporter, monkeypatch):
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    rt = runtime(tmp_path)
    assert rt.invocation().run([{"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}])[0].content == "3"
    assert not tracing.wanted()
    assert exporter.get_finished_spans() == ()
    rt.close()


@settings(derandomize=True, max_examples=80, deadline=None)
@given(raw=st.one_of(st.text(max_size=40), st.dictionaries(st.text(max_size=8), st.one_of(
    st.integers(-2**60, 2**60), st.text(max_size=12), st.booleans(), st.none()), max_size=5)))
def test_traced_arguments_are_the_raw_text_or_its_exact_json(raw):
    text = tracing._arguments(raw)
    assert isinstance(text, str)
    assert text == raw if isinstance(raw, str) else orjson.loads(text) == raw


def run_script(tmp_path, body: str) -> str:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("imported", ["before", "after the first call"])
def test_a_provider_set_through_the_public_api_after_the_first_calls_is_used_from_then_on(tmp_path, imported):
    early = imported == "before"
    out = run_script(tmp_path, f"""
        import sys
        import tooldeck
        if {early}:
            from opentelemetry import trace

        rt = tooldeck.Runtime({str(tmp_path / "home")!r}, builtins=[], records=False)

        @rt.tool(extension_id="ext")
        async def add(a: int, b: int) -> int:
            '''Add.'''
            return a + b

        inv = rt.invocation()
        inv.run([{{"id": "before", "name": "add", "arguments": {{"a": 1, "b": 2}}}}])
        assert ("opentelemetry.trace" in sys.modules) is {early}
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        trace.set_tracer_provider(provider)
        inv.run([{{"id": "after", "name": "add", "arguments": {{"a": 1, "b": 2}}}},
                 {{"id": "then", "name": "add", "arguments": {{"a": 1, "b": 2}}}}])
        print([s.attributes["gen_ai.tool.call.id"] for s in memory.get_finished_spans()],
              [type(f).__name__ for f in sys.meta_path if type(f).__module__ == "tooldeck.tracing"])
    """)
    assert out == "['after', 'then'] []"  # and the import watch removed itself


def test_without_opentelemetry_importable_tools_run_and_no_span_code_loads(tmp_path):
    out = run_script(tmp_path, f"""
        import sys
        sys.modules["opentelemetry"] = None  # as if not installed: every import of it fails
        import tooldeck
        from tooldeck import tracing

        rt = tooldeck.Runtime({str(tmp_path / "home")!r}, builtins=[], records=False)

        @rt.tool(extension_id="ext")
        def add(a: int, b: int) -> int:
            '''Add.'''
            return a + b

        inv = rt.invocation()
        print(inv.run([{{"id": "c", "name": "add", "arguments": {{"a": 1, "b": 2}}}}])[0].content,
              tracing.wanted(), "opentelemetry.trace" in sys.modules)
    """)
    assert out == "3 False False"
