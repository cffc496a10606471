"""The gate: every call is checked here, in one fixed order, before anything runs.

1. resolve the call name through the snapshot (unknown → `tool.unknown_tool`);
2. charge the budget, total and per tool, keyed by ToolId (over → `tool.budget_exhausted`);
   unknown names are charged against the total too, so a confused model cannot loop forever;
3. decode the wire arguments (`ToolArguments`; not an object → `tool.invalid_arguments`);
4. validate them against the tool's input schema (→ `tool.invalid_arguments`);
5. tool-choice rules: `none`, `auto`, `required`, or one specific tool (→ `tool.choice_violation`);
   then repeated calls: the same call over and over with the same result (→ `tool.repeated_call`, repeats.py);
   then, for a tool with hooks, the gate stops here: the invocation runs its pre-call hooks
   (policy/hook_flow.py: deny, rewrite, ask) and calls `permit` with the arguments they leave;
   then argument rules (policy/rules.py): a rule that matches the arguments decides (`deny` →
   `tool.rule_denied`), else the tool's permission;
6. permission: `allow` | `ask` | `deny`; `ask` is settled by the host's confirmation callback right
   before the tool runs, and with no callback it is denied (→ `tool.permission_denied`). A tool may
   make some of its calls `ask` by their arguments (`ToolDescriptor.confirm_when`: `http_request`
   with a method other than GET) when the Profile does not set its permission.

Choice comes before permission so that a human is never asked about a call that would be refused anyway.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from orjson import JSONDecodeError
from orjson import loads as _loads

from tooldeck.catalog.profile import Permission, Profile, matches
from tooldeck.catalog.sources import ToolSource
from tooldeck.core.arguments import MISSING, ToolArguments
from tooldeck.core.errors import (
    BUDGET_EXHAUSTED,
    CHOICE_VIOLATION,
    INVALID_ARGUMENTS,
    PERMISSION_DENIED,
    REPEATED_CALL,
    RULE_DENIED,
    SCHEMA_REQUIRED,
    UNKNOWN_TOOL,
    USE_RUN_TOOL,
)
from tooldeck.core.jsonfast import decoded_fast, plain_fast
from tooldeck.core.jsonvalue import SHORT_TEXT, shown
from tooldeck.core.results import AgentToolResult, recoverable_error
from tooldeck.policy.hooks import HookChain, Hooked
from tooldeck.policy.rules import Resolver, RuleSet, compile_rules, decide
from tooldeck.projection import Guidance
from tooldeck.repeats import RepeatGuard
from tooldeck.snapshot.deferred import META_IDS, RUN_TOOL
from tooldeck.snapshot.schema_transforms import transform
from tooldeck.snapshot.snapshot import Binding, Snapshot
from tooldeck.validation import CompiledSchema

_LISTED_NAMES = 60
_VALIDATOR_FAULTS = (ValueError, TypeError, RecursionError, OverflowError)
"""What a compiled validator raises on a value it cannot read (the gate checks values are JSON first;
this is the second line of defence: such a call is refused, never raised)."""


@dataclass(slots=True)
class GateEntry:
    """Per-binding data computed once per invocation (the hot path only reads it)."""

    binding: Binding
    tool_id: str
    permission: Permission
    timeout_s: float
    concurrency_safe: bool = False
    source: ToolSource | None = None
    """The catalog source of the tool's kind, when known (dispatch resolves the executable there)."""
    _schema: CompiledSchema | None = None
    is_valid: Any = None
    """The compiled validator's `is_valid`, set on the tool's first call (None: no usable schema)."""
    confirm_when: Callable[[dict[str, Any]], bool] | None = None
    """The tool's `confirm_when`, kept only when the Profile does not set the tool's permission itself."""
    rules: RuleSet | None = None
    """The Profile's argument rules that name this tool (policy/rules.py)."""

    @property
    def schema(self) -> CompiledSchema:
        if self._schema is None:
            self._schema = CompiledSchema(self.binding.descriptor.input_schema)
            self.is_valid = self._schema.is_valid
        return self._schema


@dataclass(slots=True)
class Admitted:
    entry: GateEntry
    args: dict[str, Any]
    """The decoded, validated arguments (an admitted call's arguments are always a valid object)."""
    needs_confirmation: bool = False
    hooks: HookChain | None = None
    """Pre-call hooks still to run (policy/hooks.py): the argument rules and the permission are decided after
    them (`Gate.permit`); the invocation settles such a call before anything of its turn runs or is recorded."""
    hooked: Hooked | None = None
    """What the call's hooks hand to dispatch (its post-call hooks, the context its pre-call hooks added)."""


@dataclass(slots=True)
class Refused:
    result: AgentToolResult
    entry: GateEntry | None


ToolChoice = str | dict[str, str]


@dataclass
class BudgetState:
    total: int = 0
    per_tool: dict[str, int] = field(default_factory=dict)
    """Calls charged per tool id, for the tools that have a per-tool cap (the only ones it limits)."""


@dataclass(slots=True)
class GateTable:
    """Everything the gate needs that depends only on (snapshot, profile): built once, shared by
    every invocation that reuses the snapshot, so compiled validators survive across invocations."""

    entries: dict[str, GateEntry]
    names: list[str]
    native_aliases: dict[str, str]
    listed: frozenset[str]
    """Deferred modes: call names reachable only by name (not in the tools array with a schema)."""
    guidance: Guidance
    """The spill guidance: which reading tools this snapshot has."""
    explain_unknown: list[Callable[[str], str | None]] = field(default_factory=list)
    """Sources that can say why a call name is missing (e.g. its MCP server is down); the first answer is the
    unknown-tool message, before the list of available tools."""
    profile: Profile | None = None
    """The Profile the table was built for (a source's `prepare_gate` reads what it names explicitly)."""

    @classmethod
    def build(cls, snapshot: Snapshot, profile: Profile) -> GateTable:
        entries = {
            b.call_name: GateEntry(b, b.tool_id, permission_for(b, profile), profile.timeout_for(b.tool_id),
                                   concurrency_safe(b, profile), confirm_when=_own_default(b, profile),
                                   rules=compile_rules(profile.rules, b.tool_id, matches) if profile.rules else None)
            for b in snapshot.bindings
        }
        aliases = {b.descriptor.id.name.replace(".", "_"): b.call_name for b in snapshot.bindings}
        listed = frozenset(snapshot.extra.get("listed") or ())
        return cls(entries, list(entries), aliases, listed, Guidance.for_snapshot(snapshot), profile=profile)


_STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


def permission_for(binding: Binding, profile: Profile) -> Permission:
    """The Profile's entry for the tool; else its default permission, made `ask` for a destructive tool
    when `annotation_defaults` is on (deny beats ask beats allow)."""
    explicit = profile.first_match(profile.permissions, binding.tool_id)
    if explicit is not None:
        return explicit  # type: ignore[no-any-return]
    default = profile.default_permission
    if profile.annotation_defaults and binding.descriptor.annotations.destructive and _STRICTNESS[default] < 1:
        return "ask"
    return default


def concurrency_safe(binding: Binding, profile: Profile) -> bool:
    """Calls that may run together with their turn's other such calls, as the tool says; a Profile `serial`
    entry keeps a tool one at a time, and without `annotation_defaults` an MCP tool's hints do not count."""
    if profile.serial and any(matches(p, binding.tool_id) for p in profile.serial):
        return False
    if not profile.annotation_defaults and binding.tool_id.startswith("mcp/"):
        return False
    return binding.descriptor.annotations.concurrency_safe


def _own_default(binding: Binding, profile: Profile) -> Callable[[dict[str, Any]], bool] | None:
    confirm_when = binding.descriptor.confirm_when
    if confirm_when is None or profile.first_match(profile.permissions, binding.tool_id) is not None:
        return None
    return confirm_when


class Gate:
    def __init__(self, snapshot: Snapshot, profile: Profile, table: GateTable | None = None,
                 fetched: set[str] | None = None, repeats: RepeatGuard | None = None,
                 resolve_path: Resolver | None = None, hooks: dict[str, HookChain] | None = None) -> None:
        self.snapshot = snapshot
        self.budget = BudgetState()
        table = table or GateTable.build(snapshot, profile)
        self.entries = table.entries
        self._names = table.names
        self._native_aliases = table.native_aliases
        self._listed = table.listed
        self._explain_unknown = table.explain_unknown
        self._deferred = bool(table.listed) and snapshot.loading == "deferred"
        self._names_only = bool(table.listed) and snapshot.loading == "names_only"
        self._listed_only = self._deferred or self._names_only
        self._limit = snapshot.max_calls_per_invocation
        self.fetched: set[str] = fetched if fetched is not None else set()
        """Tool ids whose schema the model has fetched in this run (deferred modes)."""
        self._repeat_limit = profile.max_identical_calls
        self.repeats = repeats if self._repeat_limit else None
        self._resolve_path = resolve_path
        """The run's workspace symlink resolver, for path rules (None: lexical paths only)."""
        """The run's repeated-call guard (None: detection is off); it must `observe` the results."""
        self.hooks = hooks
        """Each hooked tool's hook chain, by tool id (None: this invocation has no hooks)."""

    def check(self, call_id: str, name: str, wire_args: Any = MISSING,
              choice: ToolChoice = "auto") -> Admitted | Refused:
        entry = self.entries.get(name)
        if entry is None or self._listed_only:
            return self._check_special(call_id, name, entry, wire_args, choice)
        # Steps 3 before 2 is safe here: decoding has no effect, and `_admit` charges before any refusal.
        # The inline paths take what orjson decodes (or writes) exactly and within the limits; anything
        # else goes through ToolArguments, which decodes exactly or names the problem.
        kind = type(wire_args)
        if kind is str:
            try:
                args = _loads(wire_args)
            except JSONDecodeError:
                args = None
            if type(args) is dict and (len(wire_args) < SHORT_TEXT or decoded_fast(args, wire_args)):
                return self._admit(call_id, entry, args, choice)
        elif kind is dict:
            if plain_fast(wire_args):
                return self._admit(call_id, entry, wire_args, choice)
        elif wire_args is MISSING or wire_args is None:
            return self._admit(call_id, entry, {}, choice)
        return self.check_entry(call_id, entry, ToolArguments.decode(wire_args), choice)

    def check_general(self, call_id: str, name: str, wire_args: Any = MISSING,
                      choice: ToolChoice = "auto") -> Admitted | Refused:
        """`check` without its inline decode (every argument through `ToolArguments.decode`): same answers."""
        return self._check_special(call_id, name, self.entries.get(name), wire_args, choice)

    def _check_special(self, call_id: str, name: str, entry: GateEntry | None, wire_args: Any,
                       choice: ToolChoice) -> Admitted | Refused:
        """Unknown names, and the deferred modes' rules for tools listed by name only."""
        if self._deferred:
            if name == RUN_TOOL and entry is not None:
                return self._unwrap(call_id, entry, wire_args, choice)
            if name in self._listed:
                return self._charge_and_refuse(call_id, entry, USE_RUN_TOOL, (
                    f"`{name}` is not callable directly. Fetch its schema with find_tools, then call "
                    f'run_tool(name="{name}", args={{...}}).'))
        elif self._names_only and name in self._listed and entry is not None and entry.tool_id not in self.fetched:
            return self._schema_first(call_id, entry, f"`{name}`")
        if entry is None:
            return self._charge_and_refuse(call_id, None, UNKNOWN_TOOL, self.unknown_message(name))
        return self.check_entry(call_id, entry, ToolArguments.decode(wire_args), choice)

    def check_entry(self, call_id: str, entry: GateEntry, arguments: ToolArguments,
                    choice: ToolChoice) -> Admitted | Refused:
        args = arguments.value
        if args is not None:
            return self._admit(call_id, entry, args, choice)
        over = self._charge(entry)
        if over is not None:
            return self._refused(call_id, entry, BUDGET_EXHAUSTED, over)
        message = arguments.invalid_message(entry.binding.call_name)
        return self._refused(call_id, entry, INVALID_ARGUMENTS, message)

    def _admit(self, call_id: str, entry: GateEntry, args: dict[str, Any], choice: ToolChoice) -> Admitted | Refused:
        """Steps 2 and 4–6 for arguments that decoded to an object."""
        budget = self.budget
        if budget.total < self._limit and entry.binding.max_calls is None:  # `_charge` inlined: the common case
            budget.total += 1
        else:
            over = self._charge(entry)
            if over is not None:
                return self._refused(call_id, entry, BUDGET_EXHAUSTED, over)
        is_valid = entry.is_valid
        try:
            valid = is_valid is not None and is_valid(args)
        except _VALIDATOR_FAULTS:
            valid = False
        if not valid:
            refusal = self._invalid(call_id, entry, args)
            if refusal is not None:
                return refusal
        if choice != "auto" and choice != "required":
            violation = self._choice_violation(entry, choice)
            if violation:
                return self._refused(call_id, entry, CHOICE_VIOLATION, violation)
        repeats = self.repeats
        if repeats is not None:
            loop = repeats.check(call_id, entry.tool_id, entry.binding.call_name, args, self._repeat_limit)
            if loop is not None:
                return self._refused(call_id, entry, REPEATED_CALL, loop)
        hooks = self.hooks
        if hooks is not None:
            chain = hooks.get(entry.tool_id)
            if chain is not None:  # the rules and the permission judge the arguments the hooks leave
                return Admitted(entry, args, False, chain)
        return self.permit(call_id, entry, args)

    def permit(self, call_id: str, entry: GateEntry, args: dict[str, Any], ask: bool = False,
               hooked: Hooked | None = None) -> Admitted | Refused:
        """Argument rules, then the permission (the tail of the order). `ask`: a pre-call hook asked for
        confirmation (hooks only tighten: the strictest of hook, rule and permission wins)."""
        if entry.rules is not None:
            decision = decide(entry.rules, args, self._resolve_path)
            if decision is not None:
                if decision.permission == "deny":
                    return self._refused(call_id, entry, RULE_DENIED, (
                        f"`{entry.binding.call_name}` was not run: {decision.reason}. Do it another way, or ask "
                        "the user."))
                return Admitted(entry, args, ask or decision.permission == "ask", None, hooked)
        permission = entry.permission
        if permission == "allow":
            return Admitted(entry, args, ask or (entry.confirm_when is not None and entry.confirm_when(args)),
                            None, hooked)
        if permission == "deny":
            return self._refused(call_id, entry, PERMISSION_DENIED, f"`{entry.binding.call_name}` is not "
                                 "permitted in this invocation; it was not run. Use another tool.")
        return Admitted(entry, args, True, None, hooked)

    def _invalid(self, call_id: str, entry: GateEntry, args: dict[str, Any]) -> Refused | None:
        """The refusal for arguments the schema rejects (or a schema that does not compile); None if valid.
        Compiles the tool's validator on its first call."""
        schema = entry.schema
        if schema.error is not None:
            return self._refused(call_id, entry, "tool.schema_invalid", (
                f"`{entry.binding.call_name}` cannot be called: its input schema is invalid ({schema.error}). "
                "Use another tool."))
        problems = schema.problems(args)
        if problems is None:
            return None
        return self._refused(call_id, entry, INVALID_ARGUMENTS, self.invalid_message(
            entry, problems or ["the arguments do not match the tool's schema"]))

    @staticmethod
    def _refused(call_id: str, entry: GateEntry, code: str, message: str) -> Refused:
        return Refused(recoverable_error(call_id, entry.tool_id, code, message), entry)

    def _charge_and_refuse(self, call_id: str, entry: GateEntry | None, code: str, message: str) -> Refused:
        """A refusal that still charges the budget (so a confused model cannot loop for free)."""
        over = self._charge(entry)
        tool_id = entry.tool_id if entry is not None else None
        return Refused(recoverable_error(call_id, tool_id, BUDGET_EXHAUSTED if over else code, over or message),
                       entry)

    def _schema_first(self, call_id: str, entry: GateEntry, how: str) -> Refused:
        """The tool's schema instead of a run: the call came before the schema was fetched."""
        self.fetched.add(entry.tool_id)
        b = entry.binding
        schema = orjson.dumps({"name": b.call_name, "description": b.descriptor.description,
                               "parameters": transform(b.descriptor.input_schema, self.snapshot.provider)},
                              option=orjson.OPT_INDENT_2).decode()
        message = (f"`{b.call_name}` was not run: the call came before its schema was fetched. Its schema is below; "
                   f"call {how} again with arguments that match it.\n{schema}")
        return self._charge_and_refuse(call_id, entry, SCHEMA_REQUIRED, message)

    def _unwrap(self, call_id: str, run_entry: GateEntry, wire_args: Any, choice: ToolChoice) -> Admitted | Refused:
        """`run_tool(name, args)` → the real tool; every later check sees the real tool and its id."""
        outer = ToolArguments.decode(wire_args)
        usage = 'run_tool needs `name` (a tool listed in the turn context) and `args` (its arguments as an object).'
        if not outer.is_valid:
            return self._charge_and_refuse(call_id, None, INVALID_ARGUMENTS, f"{usage} {outer.invalid_message()}")
        wrapper = outer.to_replay_object()
        name = wrapper.get("name")
        if not isinstance(name, str) or not name.strip():
            return self._charge_and_refuse(call_id, None, INVALID_ARGUMENTS, usage)
        name = name.strip()
        if name == RUN_TOOL:
            return self._charge_and_refuse(call_id, None, INVALID_ARGUMENTS,
                                           "run_tool cannot run itself; give the name of the tool to run.")
        entry = self.entries.get(name)
        if entry is None:
            # The meta-tools are never suggested as the tool run_tool should run.
            return self._charge_and_refuse(call_id, None, UNKNOWN_TOOL, self.unknown_message(name, targets_only=True))
        if name in self._listed and entry.tool_id not in self.fetched:
            return self._schema_first(call_id, entry, f'run_tool(name="{name}", args={{...}})')
        if "args" in wrapper:
            inner = ToolArguments.decode(wrapper["args"])
        else:
            # Models often flatten the arguments next to `name`; accept that spelling.
            inner = ToolArguments.decode({k: v for k, v in wrapper.items() if k != "name"})
        return self.check_entry(call_id, entry, inner, choice)

    def _charge(self, entry: GateEntry | None) -> str | None:
        budget = self.budget
        limit = self._limit
        if budget.total >= limit:
            return (f"The tool call limit for this invocation has been reached ({limit} calls). "
                    "Answer with what you have.")
        cap = entry.binding.max_calls if entry is not None else None
        if cap is not None:
            used = budget.per_tool.get(entry.tool_id, 0)  # type: ignore[union-attr]
            if used >= cap:
                return (f"`{entry.binding.call_name}` has reached its call limit for this invocation "  # type: ignore[union-attr]
                        f"({cap} calls). Use other tools or answer with what you have.")
            budget.per_tool[entry.tool_id] = used + 1  # type: ignore[union-attr]
        budget.total += 1
        return None

    def _choice_violation(self, entry: GateEntry, choice: ToolChoice) -> str | None:
        if choice == "none":
            return "Tool calls are not allowed in this turn; answer in text."
        wanted = choice.get("tool") or choice.get("name") if isinstance(choice, dict) else choice
        if wanted in (entry.tool_id, entry.binding.call_name):
            return None
        target = next(
            (e.binding.call_name for e in self.entries.values() if wanted in (e.tool_id, e.binding.call_name)), wanted
        )
        return f"This turn requires `{target}`, not `{entry.binding.call_name}`; call `{target}`."

    def unknown_message(self, name: str, targets_only: bool = False) -> str:
        """`targets_only`: the name was the target of run_tool, so the meta-tools are not suggested."""
        name = str(name)
        why = next((said for explain in self._explain_unknown if (said := explain(name))), None) if name else None
        pool = [n for n in self._names if self.entries[n].tool_id not in META_IDS] if targets_only else self._names
        guess = self._native_aliases.get(name.replace(".", "_")) if name else None
        if guess is not None and guess not in pool:
            guess = None
        if guess is None and name and len(name) <= 200:
            close = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
            guess = close[0] if close else None
        listed = ", ".join(self._names[:_LISTED_NAMES]) or "(none)"
        if len(self._names) > _LISTED_NAMES:
            listed += f", … ({len(self._names) - _LISTED_NAMES} more)"
        hint = f" Did you mean `{guess}`?" if guess else ""
        if why is not None:
            head = why
        elif name.strip():
            head = f"`{shown(name, 100)}` is not an available tool; nothing was run.{hint}"
        else:
            head = f"The call has no tool name; nothing was run.{hint}"
        if self._deferred or self._names_only:
            return f"{head} Look up available tools with find_tools."
        return f"{head} Available tools: {listed}."

    @staticmethod
    def invalid_message(entry: GateEntry, problems: list[str]) -> str:
        listed = "; ".join(problems)
        return f"Invalid arguments for `{entry.binding.call_name}`: {listed}. Fix the arguments and call again."

    def permission_refusal(self, call_id: str, entry: GateEntry) -> AgentToolResult:
        return recoverable_error(
            call_id, entry.tool_id, PERMISSION_DENIED,
            f"`{entry.binding.call_name}` needs confirmation and it was not given; it was not run. "
            "Ask the user, or continue without it.",
        )
