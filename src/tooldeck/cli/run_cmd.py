"""`tooldeck run "task"`: drive a model with the home's tools until it is done (docs/agent.md).

The model's text streams to stdout; each tool call, its result and the final status go to stderr
(plain lines when piped, a rich live view in a terminal), so `tooldeck run … > answer.md` keeps the
answer alone. `--json` prints every event of the run as one JSON line on stdout instead.

Exit codes: 0 the run completed; 1 it ended otherwise (a budget, a failed model request; the status
and the error are on stderr); 2 bad flags or configuration; 130 / 143 cancelled by SIGINT / SIGTERM.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any, TextIO

import typer

from tooldeck.cli.common import (
    DEFAULT_HOME,
    HomeOption,
    LoadingOption,
    ProfileOption,
    cli_app,
    open_runtime,
    usage_errors,
)

if TYPE_CHECKING:
    from tooldeck.agent.events import AgentEvent, AgentResult

PREVIEW_CHARS = 160
EXIT_CANCELLED = {"SIGINT": 130, "SIGTERM": 143}


def _one_line(text: Any, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _usage(data: dict[str, Any]) -> str:
    u = data["usage"]
    return f"in={u['input_tokens']} out={u['output_tokens']} cached={u['cached_tokens']}"


class PlainView:
    """Piped output: text deltas to `out` as they come; one line per call, result and status to `err`."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.open_text = False

    def __call__(self, event: AgentEvent) -> None:
        kind, d = event.kind, event.data
        if kind == "text":
            self.out.write(d["text"])
            self.out.flush()
            self.open_text = True
            return
        if kind in ("model_turn", "run_finished") and self.open_text:
            self.out.write("\n")
            self.out.flush()
            self.open_text = False
        line = self.line(event)
        if line is not None:
            self.err.write(line + "\n")
            self.err.flush()

    @staticmethod
    def line(event: AgentEvent) -> str | None:
        kind, d = event.kind, event.data
        if kind == "tool_call":
            args = d["arguments"] if isinstance(d["arguments"], str) else str(d["arguments"] or "")
            return f"→ {d['name']} {_one_line(args)}"
        if kind == "tool_result":
            mark = f"✗ [{d['error_code']}]" if d["is_error"] else "←"
            return f"{mark} {_one_line(d['content'])}"
        if kind == "commit":
            return f"⇪ committed {d['path']} ({d['mode']}, {d['chars']} characters)"
        if kind == "todo":
            marks = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
            return "☐ checklist:" + "".join(f"\n  {marks[t['status']]} {t['content']}" for t in d["todos"])
        if kind == "background_reports":
            return f"⧗ {d['count']} background report(s) for the next turn"
        if kind == "run_finished":
            by = f" by {d['completed_by']}" if d["completed_by"] and d["completed_by"] != "answer" else ""
            error = f"\nerror: {d['error_code']}: {d['error']}" if d["error_code"] else ""
            return f"[{d['status']}{by} · {d['turns']} turn(s) · {_usage(d)}]{error}"
        return None


class LiveView:
    """A terminal: the turn's text and its calls in a rich live region; each finished turn is printed
    above it for good."""

    def __init__(self, console: Any) -> None:
        from rich.live import Live

        self.console = console
        self.text = ""
        self.calls: dict[str, list[str]] = {}
        self.live = Live(console=console, auto_refresh=False, transient=True, redirect_stdout=False)
        self.live.start()

    def _render(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        parts: list[Any] = [Text(self.text)] if self.text else []
        for line, state in self.calls.values():
            style = {"running": "yellow", "ok": "green", "error": "red"}[state]
            mark = {"running": "…", "ok": "✓", "error": "✗"}[state]
            parts.append(Text(f"{mark} {line}", style=style, overflow="ellipsis", no_wrap=True))
        return Group(*parts)

    def _refresh(self) -> None:
        self.live.update(self._render(), refresh=True)

    def _flush_turn(self) -> None:
        if self.text or self.calls:
            self.console.print(self._render())
        self.text, self.calls = "", {}
        self._refresh()

    def __call__(self, event: AgentEvent) -> None:
        kind, d = event.kind, event.data
        if kind == "text":
            self.text += d["text"]
        elif kind == "turn_started":
            self._flush_turn()
        elif kind == "tool_call":
            self.calls[str(d["call_id"])] = [PlainView.line(event) or "", "running"]
        elif kind == "tool_result":
            entry = self.calls.setdefault(str(d["call_id"]), ["", "running"])
            entry[0] = f"{entry[0]}  {PlainView.line(event)}"
            entry[1] = "error" if d["is_error"] else "ok"
        elif kind == "model_turn" and not d["calls"]:
            self.text = d["text"] or self.text
        elif kind in ("commit", "background_reports", "todo"):
            self.console.print(PlainView.line(event), style="cyan", markup=False, highlight=False)
        elif kind == "run_finished":
            self._flush_turn()
            self.live.stop()
            self.console.print(PlainView.line(event), style="bold green" if d["status"] == "completed" else "bold red",
                               markup=False, highlight=False)
            return
        self._refresh()

    def stop(self) -> None:
        self.live.stop()

    def pause(self, asking: bool) -> None:
        """Step aside while `ask_user` prompts on the terminal, and come back after."""
        if asking:
            self.live.stop()
        else:
            self.live.start()


class JsonView:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: AgentEvent) -> None:
        import orjson

        self.out.write(orjson.dumps(event.to_dict(), default=str).decode() + "\n")
        self.out.flush()


def run_cmd(
    task: Annotated[str, typer.Argument(metavar="TASK", help="What the model should do.")],
    model: Annotated[str | None, typer.Option("--model", "-m", metavar="NAME",
                                              help="A [models] name of tooldeck.toml, or a model id (then with "
                                                   "--provider); default: models.default.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", metavar="NAME",
                                                 help="openai | openai_responses | anthropic | gemini.")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", metavar="URL",
                                                 help="The provider endpoint, e.g. an OpenAI-compatible local "
                                                      "server: http://127.0.0.1:11434/v1 (Ollama).")] = None,
    max_turns: Annotated[int | None, typer.Option("--max-turns", metavar="N", min=1,
                                                  help="Model turns at most (default: the model's max_turns, "
                                                       "else 50).")] = None,
    instructions: Annotated[str | None, typer.Option("--instructions", "-i", metavar="TEXT",
                                                     help="System instructions for the model.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run's events as JSON lines (docs/agent.md).")]
    = False,
    home: HomeOption = DEFAULT_HOME,
    profile: ProfileOption = None,
    loading: LoadingOption = None,
) -> None:
    """Run a model on TASK with the home's tools until it answers or finishes; stream what it does."""
    from tooldeck.core.errors import TooldeckError

    runtime = open_runtime(home, profile, loading=loading)
    try:
        try:
            agent = runtime.agent(model, provider=provider, base_url=base_url, instructions=instructions,
                                  max_turns=max_turns)
        except TooldeckError as exc:
            usage_errors(exc)
        view = _view(as_json)
        agent.on_event = view
        from tooldeck.cli.ask_prompt import TerminalAnswerer  # ask_user: questions on stderr, answers from stdin

        agent.ask_user = TerminalAnswerer(pause=view.pause if isinstance(view, LiveView) else None)
        try:
            result, signal_name = _drive(runtime, agent, task)
        finally:
            if isinstance(view, LiveView):
                view.stop()  # also when a host fault propagates: the terminal gets its cursor back
    finally:
        runtime.close()
    if signal_name is not None:
        if not as_json:
            sys.stderr.write(f"cancelled by {signal_name}\n")
        raise typer.Exit(EXIT_CANCELLED[signal_name])
    assert result is not None
    raise typer.Exit(0 if result.ok else 1)


def _view(as_json: bool) -> Any:
    if as_json:
        return JsonView(sys.stdout)
    if sys.stderr.isatty() and sys.stdout.isatty():
        from rich.console import Console

        return LiveView(Console(stderr=True))
    return PlainView(sys.stdout, sys.stderr)


def _drive(runtime: Any, agent: Any, task: str) -> tuple[AgentResult | None, str | None]:
    """Run the agent on the runtime's loop; SIGINT / SIGTERM cancel it (the model request is closed,
    the turn's tools are cancelled, the run is recorded as cancelled)."""
    import asyncio
    import signal

    loop = runtime.loop()
    running = loop.create_task(agent.run(task))
    got: list[str] = []

    def cancel(name: str) -> None:
        got.append(name)
        running.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, cancel, sig.name)
    try:
        return loop.run_until_complete(running), None
    except asyncio.CancelledError:
        return agent.result, (got[0] if got else "SIGINT")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        loop.run_until_complete(loop.shutdown_asyncgens())  # close what a cut-off stream left open


run_app = cli_app(run_cmd)
