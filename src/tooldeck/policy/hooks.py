"""Pre- and post-call hooks (issue 19 item 4; docs/configuration.md "Hooks").

A hook is told about one call and answers in one shape, whether it is a Python callable or an
executable speaking JSON on stdin/stdout (hooks_exec.py):

- in (`HookCall`): the event (`pre_call` | `post_call`), the tool id, the call name, the arguments,
  the call, run and invocation ids; a post-call hook also gets the result text, `is_error` and `code`;
- out (`HookAnswer`): `decision` (`allow` | `deny` | `ask`; post: `allow` | `deny`), `reason` (told to
  the model on deny), `arguments` (pre: the call's new arguments, validated again), `result` (post:
  the result's new text), `context` (text appended to the result for the model).

Hooks only tighten: a hook's `allow` never loosens the Profile's permission or an argument rule
(the strictest of them wins). A hook that fails, times out or answers out of protocol stops its call
(fail closed): that is a result with a `hook.*` code, never an exception.
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

HookEvent = Literal["pre_call", "post_call"]
EVENTS: tuple[str, ...] = ("pre_call", "post_call")

DENIED = "hook.denied"
FAILED = "hook.failed"
TIMEOUT = "hook.timeout"
INVALID_OUTPUT = "hook.invalid_output"
INVALID_ARGUMENTS = "hook.invalid_arguments"

_DECISIONS = {"pre_call": frozenset(("allow", "deny", "ask")), "post_call": frozenset(("allow", "deny"))}
_KEYS = {"pre_call": frozenset(("decision", "reason", "arguments", "context")),
         "post_call": frozenset(("decision", "reason", "result", "context"))}


class HookFailure(Exception):
    """A hook that could not answer (crashed, timed out, answered out of protocol): `code` is a `hook.*` code,
    `detail` says what happened in a sentence fragment."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(slots=True)
class HookCall:
    """What a hook is told about a call (an executable gets it as one JSON object on stdin)."""

    event: str
    tool_id: str
    call_name: str
    arguments: dict[str, Any]
    call_id: str
    run_id: str
    invocation_id: str
    result: str | None = None
    """post_call: the result's text as the model would get it."""
    is_error: bool | None = None
    code: str | None = None
    """post_call: the result's error code (None when it is not an error)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"event": self.event, "tool_id": self.tool_id, "call_name": self.call_name,
                                "arguments": self.arguments, "call_id": self.call_id, "run_id": self.run_id,
                                "invocation_id": self.invocation_id}
        if self.event == "post_call":
            data.update(result=self.result, is_error=self.is_error, code=self.code)
        return data


@dataclass(frozen=True, slots=True)
class HookAnswer:
    """A hook's answer. The default (and a Python hook returning None, an executable printing nothing) allows
    the call unchanged."""

    decision: Literal["allow", "deny", "ask"] = "allow"
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    result: str | None = None
    context: str | None = None


ALLOW = HookAnswer()


def answer_from(data: Any, event: str) -> HookAnswer:
    """The protocol's JSON object (or a Python hook's dict) → its answer; out of protocol → HookFailure
    `hook.invalid_output` naming what is wrong."""
    if not isinstance(data, dict):
        raise HookFailure(INVALID_OUTPUT, f"its answer is a {type(data).__name__}, not a JSON object")
    unknown = sorted(str(k) for k in data if k not in _KEYS[event])
    if unknown:
        raise HookFailure(INVALID_OUTPUT, f"its answer has key(s) a {event} hook cannot give: {', '.join(unknown)} "
                          f"(expected: {', '.join(sorted(_KEYS[event]))})")
    decision = data.get("decision", "allow")
    if decision not in _DECISIONS[event]:
        raise HookFailure(INVALID_OUTPUT, f"its decision {decision!r} is not one of "
                          f"{', '.join(sorted(_DECISIONS[event]))}")
    for key in ("reason", "result", "context"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise HookFailure(INVALID_OUTPUT, f"its `{key}` is a {type(data[key]).__name__}, not a string")
    arguments = data.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise HookFailure(INVALID_OUTPUT, f"its `arguments` is a {type(arguments).__name__}, not an object")
    return HookAnswer(decision, data.get("reason"), arguments, data.get("result"), data.get("context") or None)


HookFn = Callable[[HookCall], "HookAnswer | dict[str, Any] | Awaitable[HookAnswer | dict[str, Any] | None] | None"]
"""A Python hook: returns (or awaits to) an answer, the protocol's dict, or None (allow, unchanged)."""


@dataclass(frozen=True, slots=True, eq=False)
class Hook:
    """One hook: for `event`, on the tools `tool` names (a tool id or a glob), run by `answer`."""

    event: str
    tool: str
    name: str
    answer: Callable[[HookCall], Awaitable[HookAnswer]]
    """Asks the hook; raises HookFailure when it cannot answer."""

    def applies_to(self, tool_id: str) -> bool:
        return self.tool == tool_id or fnmatch.fnmatchcase(tool_id, self.tool)

    @classmethod
    def python(cls, event: str, fn: HookFn, tool: str = "*", *, timeout_s: float | None = None,
               name: str | None = None) -> Hook:
        """A Python callable as a hook. A sync callable runs inline on the event loop (keep it quick: no
        timeout can stop it); an async one is stopped after `timeout_s` (None: no limit)."""
        if event not in EVENTS:
            raise ValueError(f"hook event {event!r} must be one of {', '.join(EVENTS)}")
        shown = name or getattr(fn, "__qualname__", None) or repr(fn)

        async def answer(call: HookCall) -> HookAnswer:
            try:
                value = fn(call)
                kind = type(value)  # the plain answers first: `isawaitable` costs more than the rest of a hook
                if kind is not HookAnswer and kind is not dict and value is not None and inspect.isawaitable(value):
                    if timeout_s is None:
                        value = await value
                    else:
                        async with asyncio.timeout(timeout_s):
                            value = await value
            except TimeoutError:
                raise HookFailure(TIMEOUT, f"it did not answer within {timeout_s:g} s and was cancelled") from None
            except Exception as exc:
                raise HookFailure(FAILED, f"it raised {type(exc).__name__}: {exc}") from exc
            if value is None:
                return ALLOW
            if type(value) is HookAnswer:
                if value.decision not in _DECISIONS[event]:
                    raise HookFailure(INVALID_OUTPUT, f"its decision {value.decision!r} is not one of "
                                      f"{', '.join(sorted(_DECISIONS[event]))}")
                return value
            return answer_from(value, event)

        return cls(event, tool, shown, answer)


@dataclass(frozen=True, slots=True)
class HookChain:
    """The hooks of one tool, in the order they run."""

    pre: tuple[Hook, ...]
    post: tuple[Hook, ...]


class Hooks:
    """A runtime's Python hooks (`Runtime(hooks=[...])`, `rt.hooks.pre(...)`), in registration order.

        @rt.hooks.pre("builtin:workspace.*")
        def no_secrets(call: HookCall) -> HookAnswer | None: ...
    """

    def __init__(self, hooks: Iterable[Hook] = ()) -> None:
        self._hooks: list[Hook] = []
        for hook in hooks:
            self.add(hook)

    def add(self, hook: Hook) -> Hook:
        if not isinstance(hook, Hook):
            raise TypeError(f"a hook must be a tooldeck Hook, not {type(hook).__name__} (use Hook.python(...))")
        self._hooks.append(hook)
        return hook

    def remove(self, hook: Hook) -> None:
        self._hooks.remove(hook)

    def pre(self, tool: str = "*", *, timeout_s: float | None = None) -> Callable[[HookFn], HookFn]:
        """Decorator: `fn` becomes a pre-call hook of the tools `tool` names."""
        return self._decorator("pre_call", tool, timeout_s)

    def post(self, tool: str = "*", *, timeout_s: float | None = None) -> Callable[[HookFn], HookFn]:
        """Decorator: `fn` becomes a post-call hook of the tools `tool` names."""
        return self._decorator("post_call", tool, timeout_s)

    def _decorator(self, event: str, tool: str, timeout_s: float | None) -> Callable[[HookFn], HookFn]:
        def register(fn: HookFn) -> HookFn:
            self.add(Hook.python(event, fn, tool, timeout_s=timeout_s))
            return fn

        return register

    def __iter__(self) -> Iterator[Hook]:
        return iter(list(self._hooks))

    def __len__(self) -> int:
        return len(self._hooks)


def chains_for(tool_ids: Iterable[str], hooks: list[Hook]) -> dict[str, HookChain] | None:
    """Each tool's chain (tools no hook names are left out); None when no tool has a hook."""
    if not hooks:
        return None
    chains: dict[str, HookChain] = {}
    for tool_id in tool_ids:
        mine = [h for h in hooks if h.applies_to(tool_id)]
        if mine:
            chains[tool_id] = HookChain(tuple(h for h in mine if h.event == "pre_call"),
                                        tuple(h for h in mine if h.event == "post_call"))
    return chains or None


@dataclass(frozen=True, slots=True)
class Hooked:
    """What an admitted call carries from its pre-call hooks to dispatch: its post-call hooks, and the context
    its pre-call hooks added (appended to its result)."""

    post: tuple[Hook, ...] = ()
    context: str | None = None
