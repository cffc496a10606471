"""The LangChain tools beyond the shared scenarios: tooldeck's result as the ToolMessage artifact,
a tool invoked without a model tool call, and arguments named like LangChain's own parameters."""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from tooldeck.adapters.langchain import tools

from .conftest import MakeRuntime, history, workspace


def by_name(inv: object) -> dict:
    return {t.name: t for t in tools(inv)}


async def test_the_tool_message_carries_tooldecks_result_as_artifact(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    message = await by_name(inv)["workspace_write_file"].ainvoke(
        {"type": "tool_call", "id": "c1", "name": "workspace_write_file",
         "args": {"path": "output/a.md", "content": "artifact"}})
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert message.artifact["tool_id"] == "builtin:workspace.write_file"
    assert message.artifact["resource_refs"] == ["output/a.md"]
    assert message.content == message.artifact["content"]
    assert (workspace(rt, "r") / "output" / "a.md").read_text() == "artifact"


def test_a_tool_invoked_without_a_tool_call_still_goes_through_the_records(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()
    inv = rt.invocation(run_id="r")
    text = by_name(inv)["forecast"].invoke({"city": "Oslo"})
    assert '"sky":"clear"' in text.replace(" ", "")
    [call] = history(rt, inv.id).calls
    assert call.call_id.startswith("lc_") and call.tool_id == "extension/weather:forecast"


async def test_arguments_named_like_langchains_parameters_reach_the_tool(make_runtime: MakeRuntime) -> None:
    rt = make_runtime()

    @rt.tool(extension_id="probe")
    def settings(config: str, run_manager: str, callbacks: str) -> str:
        """Echo the three values."""
        return f"{config}/{run_manager}/{callbacks}"

    inv = rt.invocation(run_id="r")
    message = await by_name(inv)["settings"].ainvoke(
        {"type": "tool_call", "id": "c1", "name": "settings",
         "args": {"config": "a", "run_manager": "b", "callbacks": "c"}})
    assert message.content == "a/b/c"
