"""Skills: scopes, the `run_skill` tool and the skills listing of the deferred modes' turn context.

Two scopes, later wins on a name clash:

1. the home's skills, `<home>/skills/<name>/SKILL.md`;
2. the run's own skills: the run's `skills/` root (a folder the host mounted with
   `for_run(run).views.mount("skills", dir)`, or the workspace's own `skills/` folder).

A run with no `skills/` of its own sees the home's skills there: `attach_home_skills` mounts
`<home>/skills` as the run's read-only `skills/` view when the run is created, so the file tools and the
shell read `skills/<name>/…`. `run_skill` is offered while `<home>/skills/` exists; its description
lists the home's skills (so a change there gives a new snapshot), and a call sees both scopes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tooldeck.catalog.sources import CallContext, Diagnostic
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.ids import ToolId
from tooldeck.core.preconditions import unmet
from tooldeck.sources.skill_loader import Skill, SkillFolder

RUN_SKILL_ID = ToolId("script/.skills", "run_skill")
"""`script/.skills:run_skill`: a `script`-kind id so the tool comes and goes with `<home>/skills/` (matched
by the default `script/*` allow entry, never a `tool.not_in_catalog` diagnostic); its call name is `run_skill`."""
SKILLS_ROOT = "skills"
MAX_LISTED_DESCRIPTION = 512
STATE_KEY = "tooldeck.skills"


def attach_home_skills(home: Path, run: Any) -> None:
    """Serve `<home>/skills` as the run's `skills/` view when the run has no skills of its own."""
    from tooldeck.workspace.store import for_run

    folder = home / SKILLS_ROOT
    views = for_run(run).views
    if folder.is_dir() and views.base_of(SKILLS_ROOT) is None and not (run.workspace_root / SKILLS_ROOT).exists():
        views.mount(SKILLS_ROOT, folder)


def listing(skills: list[Skill]) -> str:
    return "\n".join(f"- {s.name}: {_clip(s.description)}" for s in skills)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LISTED_DESCRIPTION else text[:MAX_LISTED_DESCRIPTION - 1] + "…"


def _without(found: list[Skill]) -> Any:
    def without_parts(_d: ToolDescriptor, names: frozenset[str]) -> ToolDescriptor:
        return describe([s for s in found if s.name not in names], conditional=False)

    return without_parts


def skill_unmet(skill: Skill, inv: Any) -> str | None:
    """Why `skill` is not available to the invocation `inv` (its front matter's `requires`), or `None`."""
    if not skill.requires:
        return None
    from tooldeck.catalog.probes import HOST_PROBES

    return unmet(skill.requires, inv.headless, inv.snapshot.provider, HOST_PROBES)


def describe(skills: list[Skill], conditional: bool = True) -> ToolDescriptor:
    text = ("Load a skill: its instructions (SKILL.md) and the folder holding its materials and scripts. Load the "
            "skill that fits the task before doing the task. Returns the skill's name, its directory (read its "
            "other files there with the file tools or the shell) and SKILL.md.")
    text += "\nAvailable skills:\n" + listing(skills) if skills else "\nNo skills are installed in the home."
    return ToolDescriptor(
        id=RUN_SKILL_ID, title="Load a skill", description=text, model_name="run_skill",
        input_schema={"type": "object", "properties": {"skill": {"type": "string", "description": "The skill's name, "
                                                                  "as listed."}},
                      "required": ["skill"], "additionalProperties": False},
        annotations=ToolAnnotations(read_only=True, idempotent=True, concurrency_safe=True),
        parts=tuple((s.name, s.requires) for s in skills if s.requires) if conditional else (),
        without_parts=_without(skills),
    )


class RunSkills:
    """The skills one run sees: the home's, then the run's own (which win)."""

    def __init__(self, home: SkillFolder) -> None:
        self.home = home
        self._own: dict[str, SkillFolder] = {}

    def _own_folder(self, run: Any) -> Path | None:
        from tooldeck.workspace.store import for_run

        mounted = for_run(run).views.base_of(SKILLS_ROOT)
        folder = Path(mounted) if mounted is not None else run.workspace_root / SKILLS_ROOT
        if not folder.is_dir() or folder.resolve() == self.home.root.resolve():
            return None
        return folder

    def for_run(self, run: Any) -> tuple[dict[str, tuple[Skill, str]], list[Diagnostic]]:
        """name → (skill, the directory to show the model), and the diagnostics of both scopes."""
        from tooldeck.workspace.store import for_run

        views = for_run(run).views
        view_base = views.base_of(SKILLS_ROOT)
        view_root = Path(view_base) if view_base is not None else run.workspace_root / SKILLS_ROOT
        home_skills, diagnostics, _ = self.home.skills()
        out: dict[str, tuple[Skill, str]] = {}
        for skill in home_skills:
            shown = f"{SKILLS_ROOT}/{skill.name}" if view_root.resolve() == self.home.root.resolve() \
                else str(skill.folder)
            out[skill.name] = (skill, shown)
        own = self._own_folder(run)
        if own is not None:
            folder = self._own.get(str(own))
            if folder is None:
                folder = self._own[str(own)] = SkillFolder(own)
            skills, own_diags, _ = folder.skills()
            diagnostics = [*diagnostics, *own_diags]
            for skill in skills:
                out[skill.name] = (skill, f"{SKILLS_ROOT}/{skill.name}")
        return dict(sorted(out.items())), diagnostics

    def usable(self, run: Any, inv: Any) -> dict[str, tuple[Skill, str]]:
        """The run's skills whose `requires` hold for the invocation `inv`."""
        skills, _ = self.for_run(run)
        return {name: item for name, item in skills.items() if skill_unmet(item[0], inv) is None}

    def run_skill(self, args: dict[str, Any], ctx: CallContext) -> str:
        skills = self.usable(ctx.run, ctx.invocation)
        name = str(args.get("skill", "")).strip()
        found = skills.get(name)
        if found is None:
            available = listing([s for s, _ in skills.values()]) or "(none)"
            return f"skill not found: {name}\navailable skills:\n{available}"
        skill, shown = found
        return f"skill: {skill.name}\nskill directory: {shown}\n\n---\n\n{skill.text}"

    def turn_context(self, run: Any, inv: Any = None) -> str:
        skills = self.usable(run, inv) if inv is not None else self.for_run(run)[0]
        if not skills:
            return ""
        return "Skills (load one with run_skill before using it):\n" + listing([s for s, _ in skills.values()])


def turn_context(inv: Any) -> str:
    """The skills listing of an invocation whose snapshot has `run_skill` (empty otherwise)."""
    if not any(b.descriptor.id == RUN_SKILL_ID for b in inv.snapshot.bindings):
        return ""
    source = inv.runtime.catalog.source("script")
    scopes = getattr(source, "skills", None)
    return scopes.turn_context(inv.run_state, inv) if isinstance(scopes, RunSkills) else ""
