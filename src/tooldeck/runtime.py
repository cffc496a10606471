"""The runtime: a catalog of tools, runs with their workspaces, and invocations with frozen snapshots.

`Runtime` owns the configuration (home dir, Profile, records), the catalog and its sources, the runs
and the private event loop of the sync facade. The parts live in their own modules: snapshots and
what is built once per snapshot in `snapshot/builder.py`, one invocation in `invocation.py`, the wire
call in `wire.py`, a run's state in `catalog/runs.py`. This module re-exports the public names.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooldeck.builtins import OPTIONAL_FAMILIES, core_builtins, family_tools, meta
from tooldeck.builtins.registry import BuiltinTool, builtin_source
from tooldeck.catalog.catalog import Catalog
from tooldeck.catalog.probes import HOST_PROBES
from tooldeck.catalog.profile import Profile, matches
from tooldeck.catalog.runs import RunState
from tooldeck.catalog.sources import Diagnostic, ToolSource
from tooldeck.core.descriptors import ALL_SCENES, Availability, AvailabilityContext, Scene, ToolAnnotations
from tooldeck.core.errors import TooldeckError
from tooldeck.core.ids import ToolId
from tooldeck.dispatch import Confirm
from tooldeck.invocation import Invocation
from tooldeck.naming import PROTOCOLS
from tooldeck.policy.hooks import Hook, Hooks
from tooldeck.policy.known_secrets import scan_home
from tooldeck.records.port import InvocationInfo, NullRecorder, Recorder
from tooldeck.snapshot.builder import Snapshots
from tooldeck.snapshot.snapshot import Snapshot
from tooldeck.sources.extensions import ExtensionRegistry
from tooldeck.wire import Call

if TYPE_CHECKING:
    from tooldeck.agent.loop import Agent
    from tooldeck.builtins.ask_user import AskUser

PROFILE_FILES = ("profile.toml", "profile.json")


class Runtime:
    def __init__(
        self,
        home: str | Path = ".tooldeck",
        *,
        profile: Profile | Mapping[str, Any] | str | Path | None = None,
        records: bool | Recorder = True,
        builtins: Iterable[BuiltinTool] | None = None,
        confirm: Confirm | None = None,
        sources: Iterable[ToolSource] = (),
        ask_user: AskUser | None = None,
        hooks: Iterable[Hook] | Hooks | None = None,
    ) -> None:
        self.home = Path(home).resolve()
        self.hooks = hooks if isinstance(hooks, Hooks) else Hooks(hooks or ())
        """Python pre- and post-call hooks of every invocation (`rt.hooks.pre(...)`; policy/hooks.py)."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.profile = self._resolve_profile(profile) if profile is not None else self._home_profile()
        self.extensions = ExtensionRegistry()
        chosen = core_builtins() if builtins is None else list(builtins)
        self._optional_families = dict(OPTIONAL_FAMILIES) if builtins is None else {}
        """Optional builtin families not loaded yet: they load when a Profile allows one of their tools."""
        self._families_lock = threading.Lock()
        self._families_checked: Profile | None = None
        sources = list(sources)
        # script and ext tools of <home>/tools/ (docs/scripts.md), unless the host brings its own script source
        if not any(s.kind == "script" for s in sources):
            from tooldeck.sources.home_scripts import HomeScriptSource

            sources.append(HomeScriptSource(self.home))
        self._builtins = builtin_source([*meta.TOOLS, *chosen])
        self.catalog = Catalog([self._builtins, self.extensions, *sources])
        self.load_builtins_for(self.profile)
        self.snapshots = Snapshots(self.catalog)
        self.recorder: Recorder = self._make_recorder(records)
        self.recording = self.recorder.recording
        self.confirm = confirm
        self.ask_user = ask_user
        """The default answerer of `ask_user` for invocations that are not headless (builtins/ask_user.py)."""
        self.runs: dict[str, RunState] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # the values its configs name are secrets to redact from results before any server connects
        scan_home(self.home)
        # MCP servers (issue 6) of <home>/tooldeck.toml [mcp] and <home>/mcp.json: one more source in the catalog
        from tooldeck.sources.mcp.wiring import attach_mcp

        self.mcp = attach_mcp(self)

    # -- configuration -------------------------------------------------------------------------
    def _home_profile(self) -> Profile:
        for name in PROFILE_FILES:
            if (self.home / name).is_file():
                return Profile.load(self.home / name)
        return Profile()

    @staticmethod
    def _resolve_profile(profile: Profile | Mapping[str, Any] | str | Path) -> Profile:
        if isinstance(profile, Profile):
            return profile
        if isinstance(profile, Mapping):
            return Profile.parse(dict(profile))
        return Profile.load(profile)

    def _make_recorder(self, records: bool | Recorder) -> Recorder:
        if records is False:
            return NullRecorder()
        if records is True:
            from tooldeck.records.store import SqliteRecorder

            return SqliteRecorder(self.home / "records.sqlite")
        return records

    def load_builtins_for(self, profile: Profile) -> None:
        """Load the optional builtin families (builtins/__init__.py) that `profile` allows a tool of; the
        catalog then offers them, and a snapshot prepared after that sees them."""
        self._families_checked = profile
        if not self._optional_families:
            return
        wanted = [name for name, ids in self._optional_families.items()
                  if any(matches(p, tid) for p in profile.allow for tid in ids)]
        if not wanted:
            return
        with self._families_lock:
            for name in wanted:
                if self._optional_families.pop(name, None) is not None:
                    for tool in family_tools(name):
                        self._builtins.add(tool.descriptor, tool.executable())

    def add_source(self, source: ToolSource) -> None:
        self.catalog.add_source(source)

    def tool(
        self,
        extension_id: str,
        name: str | None = None,
        *,
        scenes: Iterable[Scene] = ALL_SCENES,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
        blocking: bool | None = None,
        annotations: ToolAnnotations | None = None,
        enabled: bool = True,
        is_enabled: Availability | None = None,
        concurrent: bool | None = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register a plain (sync or async) function as an extension tool."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.extensions.register(fn, extension_id, name, description=description, input_schema=input_schema,
                                     scenes=scenes, enabled=enabled, blocking=blocking, annotations=annotations,
                                     concurrent=concurrent, is_enabled=is_enabled)
            return fn

        return register

    # -- runs and invocations -------------------------------------------------------------------
    def run_state(self, run_id: str | None = None, workspace: str | Path | None = None) -> RunState:
        """The state of run `run_id` (created on first use). `workspace` lets several runs share one
        session workspace directory; by default each run has `<home>/workspaces/<run-id>/`."""
        rid = run_id or f"run_{uuid.uuid4().hex[:16]}"
        state = self.runs.get(rid)
        if state is not None and workspace is not None and state.workspace_root != Path(workspace).resolve():
            raise TooldeckError("run.workspace_conflict", f"run {rid} already uses {state.workspace_root}")
        if state is None:
            if "/" in rid or "\\" in rid or rid in (".", "..") or not rid.strip():
                raise TooldeckError("run.id_invalid", f"run id {rid!r} must be one path segment")
            root = Path(workspace).resolve() if workspace is not None else self.home / "workspaces" / rid
            state = RunState(rid, root, records=self.recorder if self.recording else None, home=self.home)
            state.workspace_root.mkdir(parents=True, exist_ok=True)
            if (self.home / "skills").is_dir():  # <home>/skills is the run's skills/ unless it has its own
                from tooldeck.sources.skills import attach_home_skills

                attach_home_skills(self.home, state)
            self.runs[rid] = state
        return state

    def invocation(
        self,
        provider: str = "openai",
        scene: Scene = "chat",
        profile: Profile | Mapping[str, Any] | str | Path | None = None,
        run_id: str | None = None,
        headless: bool = False,
        *,
        confirm: Confirm | None = None,
        snapshot: Snapshot | None = None,
        workspace: str | Path | None = None,
        ask_user: AskUser | None = None,
        record: bool = True,
        hooks: Iterable[Hook] = (),
    ) -> Invocation:
        """A new invocation on a frozen snapshot (`snapshot`, or one prepared for `scene` and `profile`). With
        records on it is recorded at once (`invocation_started`) unless `record` is False: a host that only
        reads the snapshot and the turn context from it (`tooldeck serve` building a session's tool list)
        must not run calls through such an invocation, whose calls could not be recorded. `ask_user`: who
        answers the `ask_user` tool in this invocation; default: the Runtime's answerer unless the invocation
        is headless. The tool is offered only when there is one (docs/agent.md). `hooks`: Python hooks of this
        invocation only, after the Runtime's (docs/configuration.md "Hooks")."""
        if provider not in PROTOCOLS:
            raise TooldeckError("invocation.provider_invalid",
                                f"unknown provider {provider!r}; expected one of {', '.join(PROTOCOLS)}")
        if scene not in ALL_SCENES:
            raise TooldeckError("invocation.scene_invalid", f"unknown scene {scene!r}; expected chat or session")
        prof = self._resolve_profile(profile) if profile is not None else self.profile
        if prof is not self._families_checked:
            self.load_builtins_for(prof)
        run = self.run_state(run_id, workspace)
        diagnostics: list[Diagnostic] = []
        answerer = ask_user if ask_user is not None else None if headless else self.ask_user
        if snapshot is None:
            ctx = AvailabilityContext(scene=scene, headless=headless, provider=provider, run_id=run.run_id,
                                      probes=HOST_PROBES, home=self.home, can_ask=answerer is not None)
            snapshot, diagnostics = self.snapshots.prepare(ctx, prof)
        inv = Invocation(self, run, snapshot, prof, scene, headless, confirm or self.confirm, diagnostics, answerer,
                         hooks)
        if self.recording and record:
            self.recorder.invocation_started(InvocationInfo(run.run_id, inv.id, snapshot.provider, scene, headless,
                                                            snapshot.id, self.snapshots.json(snapshot), time.time()))
        return inv

    def agent(self, model: Any = None, *, provider: str | None = None, base_url: str | None = None,
              instructions: str | None = None, **options: Any) -> Agent:
        """An `agent.loop.Agent` driving this runtime's tools with a model (docs/agent.md): `model` is a
        `[models]` name of `<home>/tooldeck.toml`, a provider's model id (with `provider`), a `ModelConfig`
        or a `ModelClient`; None takes the configured default. `await rt.agent(...).run("task")`."""
        from tooldeck.agent.loop import Agent
        from tooldeck.agent.models import resolve_model  # imported here: `import tooldeck` loads no httpx
        from tooldeck.agent.types import ModelConfig

        if model is None or isinstance(model, str):
            model = resolve_model(self.home, model, provider=provider, base_url=base_url)
        elif provider is not None or base_url is not None:
            raise TooldeckError("model.config_invalid", "provider and base_url go with a model name, not with a "
                                f"{type(model).__name__}")
        if not isinstance(model, ModelConfig) and not hasattr(model, "complete"):
            raise TooldeckError("model.config_invalid", f"model must be a name, a ModelConfig or a ModelClient, "
                                f"not {type(model).__name__}")
        return Agent(self, model, instructions=instructions, **options)

    def loop(self) -> asyncio.AbstractEventLoop:
        """The private event loop behind the sync facade."""
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop

    def close(self) -> None:
        """Close the runs' tool state, then every source (MCP sessions and server processes), then the records."""
        for run in list(self.runs.values()):
            run.close()
        self.catalog.close()
        self.recorder.close()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- records: resume a recorded invocation (issue 3; see tooldeck.records.resume) -------------
    def resume(self, invocation_id: str, *, confirm: Confirm | None = None) -> Invocation:
        """Reopen a recorded invocation with its stored snapshot; its interrupted calls get
        `outcome_unknown` error results and are never run again."""
        from tooldeck.records.resume import resume_invocation

        return resume_invocation(self, invocation_id, confirm=confirm).invocation


def open(home: str | Path = ".tooldeck", **options: Any) -> Runtime:
    """Open a runtime rooted at `home` (workspaces, records, config)."""
    return Runtime(home, **options)


__all__ = ["Call", "Invocation", "RunState", "Runtime", "ToolId", "open"]
