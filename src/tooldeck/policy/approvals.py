"""Remembered approvals: a confirmation answer that holds beyond its call (docs/configuration.md,
"Remembered approvals").

The host's confirmation callback (`dispatch.Confirm`) answers `True` / `False` (this call only, as
always) or an `Approval`:

    Approval("once")                                # this call only (the same as True)
    Approval("run")                                 # every call of this tool in this run
    Approval("run", command="git diff:*")           # ... whose arguments match the pattern
    Approval("pattern", command="git diff:*")       # every matching call of this tool, in every run of the home
    Approval("always")                              # every call of this tool, in every run of the home
    Approval("run", allow=False)                    # a remembered denial: refused without asking

A pattern is an argument rule's conditions (`command`, `path`, `host`, `match`: policy/rules.py), matched
as an allow rule is for an approval (every simple command of the line covered, never the raw string) and
as a deny rule is for a denial. Remembered answers live in the records database
(records/approvals.py), so every process of the home honours them until `tooldeck approvals revoke`.

Invariants:
- they are consulted only for a call the gate made `ask`: a deny (a rule, a permission) has refused the
  call before, so a remembered approval never overrides one;
- a remembered denial beats a remembered approval;
- an approval never settles an `ask` raised because a deny rule *might* apply (tooldeck could not be
  sure, e.g. `eval "$X"` beside a `rm:*` deny rule): a human sees that call every time;
- a callback's exception, a bad `Approval` (`approval.invalid`) or an unusable records database
  (`approvals.unavailable`) is a host fault: the call does not run.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from tooldeck.core.errors import TooldeckError
from tooldeck.policy.rules import Resolver, RuleSet, Tier, compile_rules, decide

if TYPE_CHECKING:
    from tooldeck.dispatch import ConfirmationRequest
    from tooldeck.gate import GateEntry
    from tooldeck.invocation import Invocation
    from tooldeck.records.approvals import ApprovalStore, RememberedApproval

INVALID: Final = "approval.invalid"
Scope = Literal["once", "run", "pattern", "always"]
SCOPES: Final = ("once", "run", "pattern", "always")
PATTERN_KEYS: Final = ("command", "path", "host", "match")
_STATE_KEY: Final = "approvals"


@dataclass(frozen=True, slots=True)
class Approval:
    """A confirmation answer (see the module docstring). `by` names who answered (default: the callback's
    `confirmer` attribute, else the OS user); it is stored with a remembered answer."""

    scope: Scope = "once"
    allow: bool = True
    command: str | None = None
    path: str | None = None
    host: str | None = None
    match: Mapping[str, str] = field(default_factory=dict)
    by: str | None = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise TooldeckError(INVALID, f"scope {self.scope!r} is not one of {', '.join(SCOPES)}")
        if type(self.allow) is not bool:
            raise TooldeckError(INVALID, f"allow must be True or False, not {type(self.allow).__name__}")
        if not isinstance(self.match, Mapping):
            raise TooldeckError(INVALID, "match must be a mapping of JSON pointer to glob, not "
                                f"{type(self.match).__name__}")
        if self.by is not None and (not isinstance(self.by, str) or not self.by.strip()):
            raise TooldeckError(INVALID, "by must be a non-empty name (who answered), or None")
        pattern = self.pattern
        if pattern is None and self.scope == "pattern":
            raise TooldeckError(INVALID, "scope 'pattern' needs a pattern: command=, path=, host= or match= (for "
                                "example Approval('pattern', command='git diff:*'))")
        if pattern is not None and self.scope in ("once", "always"):
            hint = "drop the pattern" if self.scope == "once" else "use scope 'pattern' for a pattern in every run"
            raise TooldeckError(INVALID, f"scope {self.scope!r} takes no pattern: {hint}")
        if pattern is not None:
            _checked_rule(pattern)

    @property
    def pattern(self) -> dict[str, Any] | None:
        """The argument conditions (as a rule writes them), or None for every call of the tool."""
        found: dict[str, Any] = {k: getattr(self, k) for k in PATTERN_KEYS[:3] if getattr(self, k) is not None}
        if self.match:
            found["match"] = dict(self.match)
        return found or None

    @property
    def remembered(self) -> bool:
        return self.scope != "once"


def _checked_rule(pattern: Mapping[str, Any], tool: str = "*", permission: str = "allow") -> Any:
    from tooldeck.catalog.profile import ArgumentRule
    from tooldeck.core.typed_config import ConfigError

    try:
        return ArgumentRule.from_mapping({"tool": tool, "permission": permission, **pattern})
    except ConfigError as exc:
        raise TooldeckError(INVALID, f"the pattern {dict(pattern)!r} is not a rule's conditions: {exc.summary()}") \
            from exc


@functools.lru_cache(maxsize=256)
def _compiled(tool_id: str, permission: str, pattern_key: str) -> RuleSet:
    import orjson

    rule = _checked_rule(orjson.loads(pattern_key), tool_id, permission)
    rules = compile_rules([rule], tool_id, lambda _pattern, _tool: True)
    assert rules is not None  # one rule naming the tool
    return rules


def applies(row: RememberedApproval, args: dict[str, Any], resolve: Resolver | None) -> bool:
    """Whether a remembered answer covers this call: no pattern, or the pattern decides it as the row's
    decision (an approval: covered as an allow rule covers; a denial: matched for sure, never "unsure")."""
    key = row.pattern_key
    if key is None:
        return True
    decided = decide(_compiled(row.tool_id, row.decision, key), args, resolve)
    return decided is not None and decided.permission == row.decision


def deny_rule_unsure(rules: RuleSet | None, args: dict[str, Any], resolve: Resolver | None) -> bool:
    """The Profile's rules cannot rule out a deny rule for this call (in the tier that decides it)."""
    if rules is None:
        return False
    for tier in rules.tiers:
        denies = tuple(r for r in tier.restrict if r.permission == "deny")
        if denies and decide(RuleSet((Tier(denies, (), tier.needs_line),)), args, resolve) is not None:
            return True
        if decide(RuleSet((tier,)), args, resolve) is not None:
            return False  # this tier decided the call: the later (glob) tier was never consulted
    return False


def remembered_answer(rows: list[RememberedApproval], entry: GateEntry, args: dict[str, Any],
                      resolve: Resolver | None) -> RememberedApproval | None:
    """The remembered answer that settles this call: a matching denial first, else a matching approval
    (unless a deny rule might apply), else None (ask)."""
    for row in rows:
        if row.decision == "deny" and applies(row, args, resolve):
            return row
    allowing = [r for r in rows if r.decision == "allow"]
    if not allowing or deny_rule_unsure(entry.rules, args, resolve):
        return None
    return next((r for r in allowing if applies(r, args, resolve)), None)


def default_confirmer(confirm: Any) -> str:
    named = getattr(confirm, "confirmer", None)
    if isinstance(named, str) and named.strip():
        return named
    import getpass  # here: only a remembered answer needs it (dispatch imports this module)

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (a container without /etc/passwd entry)
        return "unknown"


async def settle(inv: Invocation, req: ConfirmationRequest, entry: GateEntry) -> bool:
    """An `ask` call: settled by a remembered answer of the home, else by the host's callback (whose
    remembered answers are stored first); with neither, denied."""
    store = _store(inv)
    rows = store.active(req.tool_id, req.run_id)
    if rows:
        found = remembered_answer(rows, entry, req.arguments, _resolver(inv, rows))
        if found is not None:
            return found.decision == "allow"
    confirm = inv.confirm
    if confirm is None:
        return False
    answer = confirm(req)
    if inspect.isawaitable(answer):
        answer = await answer
    if type(answer) is not Approval:
        return bool(answer)
    if answer.remembered:
        import socket

        store.add("allow" if answer.allow else "deny", answer.scope, req.tool_id, answer.pattern,  # type: ignore[arg-type]
                  req.run_id, req.invocation_id, req.call_id, answer.by or default_confirmer(confirm),
                  socket.gethostname())
    return answer.allow


def _store(inv: Invocation) -> ApprovalStore:
    """The home's approvals, one store (and one open reader) per run, closed with the run (`RunState.close`)."""
    state = inv.run_state.state
    store = state.get(_STATE_KEY)
    if store is None:
        from tooldeck.records.approvals import ApprovalStore

        store = state[_STATE_KEY] = ApprovalStore.of_home(inv.runtime.home)
    return store  # type: ignore[no-any-return]


def _resolver(inv: Invocation, rows: list[RememberedApproval]) -> Resolver | None:
    """Path patterns (and the Profile's path rules) see through the workspace's symbolic links, as the gate's do."""
    if not any(r.pattern and "path" in r.pattern for r in rows) and not any(r.path for r in inv.profile.rules):
        return None
    from tooldeck.policy.resolve import workspace_resolver

    return workspace_resolver(inv.run_state.workspace_root)
