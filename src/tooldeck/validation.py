"""Argument validation against a tool's input schema (draft 2020-12), compiled once per tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs

_MAX_PROBLEMS = 8
_PROBLEM_CHARS = 300
"""A problem quotes the offending value; a huge value is cut here (the model sent it, it need not read it back)."""


class CompiledSchema:
    """A compiled validator plus what the error messages need to say what a field should be."""

    __slots__ = ("_accepted", "_properties", "_validator", "error")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._properties: Mapping[str, Any] = schema.get("properties") or {}
        self._accepted = ", ".join(f"`{p}`" for p in self._properties) or "none"
        self.error: str | None = None
        try:
            self._validator: Any = jsonschema_rs.validator_for(dict(schema), offline=True)
        except (jsonschema_rs.ValidationError, ValueError, TypeError) as exc:
            self._validator = None
            self.error = str(exc).splitlines()[0]

    @property
    def is_valid(self) -> Any:
        """The compiled check (a bound method; None when the schema did not compile)."""
        return self._validator.is_valid if self._validator is not None else None

    def problems(self, args: dict[str, Any]) -> list[str] | None:
        """None when valid; else one plain sentence per problem (at most 8).

        `args` are JSON (the gate checks that first); should the validator still fail to read them,
        that is one problem, never an exception."""
        v = self._validator
        out: list[str] = []
        try:
            if v is None or v.is_valid(args):
                return None
            for err in v.iter_errors(args):
                problem = self._describe(err)
                out.append(problem if len(problem) <= _PROBLEM_CHARS else problem[:_PROBLEM_CHARS - 1] + "…")
                if len(out) == _MAX_PROBLEMS:
                    break
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            out.append(f"the arguments could not be checked against the schema ({detail[:_PROBLEM_CHARS]})")
        return out

    def _expects(self, name: str) -> str:
        sub = self._properties.get(name)
        if not isinstance(sub, Mapping):
            return ""
        bits = []
        if "type" in sub:
            t = sub["type"]
            bits.append(" or ".join(t) if isinstance(t, list) else str(t))
        if "enum" in sub:
            bits.append("one of " + ", ".join(repr(x) for x in sub["enum"][:10]))
        desc = sub.get("description")
        if isinstance(desc, str) and desc:
            bits.append(desc if len(desc) <= 80 else desc[:79] + "…")
        return f" ({'; '.join(bits)})" if bits else ""

    def _describe(self, err: Any) -> str:
        kind = err.kind
        path = "/".join(str(p) for p in err.instance_path)
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
            name = str(kind.property).strip('"')
            where = f" in `{path}`" if path else ""
            return f"missing required field `{name}`{where}{self._expects(name) if not path else ''}"
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.AdditionalProperties):
            extra = ", ".join(f"`{u}`" for u in kind.unexpected)
            where = f" in `{path}`" if path else ""
            return f"unexpected field {extra}{where}; accepted fields: {self._accepted}"
        field = f"`{path}`" if path else "arguments"
        top = str(err.instance_path[0]) if err.instance_path else ""
        expects = self._expects(top) if len(err.instance_path) == 1 else ""
        return f"{field}: {err.message}{'; expected' + expects if expects else ''}"
