"""Per-provider JSON Schema transforms for the tools array.

Transforms act on *schema positions* only: the keys of `properties` are property names, so a
property called `title`, `default` or `format` is never mistaken for a keyword.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

Schema = dict[str, Any]

# Keywords whose value is a schema, a list of schemas, or a map of name → schema.
_SCHEMA_VALUED = ("items", "additionalProperties", "not", "if", "then", "else", "contains",
                  "propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def map_subschemas(schema: Mapping[str, Any], fn: Callable[[Any], Any]) -> Schema:
    """A copy of `schema` with `fn` applied to every direct subschema (not recursively)."""
    out: Schema = dict(schema)
    for key in _SCHEMA_VALUED:
        if isinstance(out.get(key), Mapping):
            out[key] = fn(out[key])
    if isinstance(out.get("items"), list):
        out["items"] = [fn(s) for s in out["items"]]
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [fn(s) for s in out[key]]
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), Mapping):
            out[key] = {name: fn(s) for name, s in out[key].items()}
    return out


def drop_keywords(schema: Any, keywords: frozenset[str]) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    stripped = {k: v for k, v in schema.items() if k not in keywords}
    return map_subschemas(stripped, lambda s: drop_keywords(s, keywords))


_ANTHROPIC_DROP = frozenset(("$schema", "$id"))


def for_anthropic(schema: Mapping[str, Any]) -> Schema:
    return drop_keywords(schema, _ANTHROPIC_DROP)


# Gemini `parameters` accept an OpenAPI 3.0 subset; everything else is dropped or rewritten.
_GEMINI_KEEP = frozenset((
    "type", "description", "nullable", "enum", "items", "properties", "required", "minItems",
    "maxItems", "minimum", "maximum", "minLength", "maxLength", "pattern", "anyOf",
    "propertyOrdering", "minProperties", "maxProperties",
))
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


class SchemaTransformError(ValueError):
    pass


def for_gemini(schema: Mapping[str, Any]) -> Schema:
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), Mapping):
            defs.update({f"#/{key}/{name}": s for name, s in schema[key].items()})
    return _gemini(copy.deepcopy(dict(schema)), defs, ())


def _resolve_ref(ref: str, defs: Mapping[str, Any], seen: tuple[str, ...]) -> Schema:
    if ref in seen:
        return {"type": "object", "description": "(recursive structure)"}
    target = defs.get(ref)
    if target is None:
        return {}
    return {"__ref__": ref, **target}


def _gemini(schema: Any, defs: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    s: Schema = dict(schema)
    ref = s.pop("$ref", None)
    if isinstance(ref, str):
        resolved = _resolve_ref(ref, defs, seen)
        seen = (*seen, resolved.pop("__ref__", ref))
        s = {**resolved, **s}
    description = s.get("description")
    notes: list[str] = []

    if "const" in s:
        value = s.pop("const")
        s["enum"] = [value]
        s.setdefault("type", _JSON_TYPES.get(type(value), "string"))
    if "oneOf" in s:
        s["anyOf"] = s.pop("oneOf")
    if isinstance(s.get("allOf"), list):
        for part in s.pop("allOf"):
            part = _gemini(part, defs, seen)
            if not isinstance(part, Mapping):
                continue
            for key, value in part.items():
                if key == "properties":
                    s["properties"] = {**s.get("properties", {}), **value}
                elif key == "required":
                    s["required"] = [*s.get("required", []), *value]
                else:
                    s.setdefault(key, value)
    t = s.get("type")
    if isinstance(t, list):
        kinds = [k for k in t if k != "null"]
        if len(kinds) < len(t):
            s["nullable"] = True
        if len(kinds) == 1:
            s["type"] = kinds[0]
        else:
            s.pop("type")
            s["anyOf"] = [{"type": k} for k in kinds]
    if isinstance(s.get("anyOf"), list):
        members = [m for m in s["anyOf"] if not (isinstance(m, Mapping) and m.get("type") == "null")]
        if len(members) < len(s["anyOf"]):
            s["nullable"] = True
        if len(members) == 1 and isinstance(members[0], Mapping):
            s.pop("anyOf")
            for key, value in members[0].items():
                s.setdefault(key, value)
        else:
            s["anyOf"] = members
    if "format" in s:
        notes.append(f"format: {s.pop('format')}")
    if "enum" in s and not all(isinstance(v, str) for v in s["enum"]):
        notes.append("allowed values: " + ", ".join(repr(v) for v in s.pop("enum")))
    if "enum" in s:
        s.setdefault("type", "string")
    if notes:
        s["description"] = (f"{description} " if description else "") + f"({'; '.join(notes)})"

    s = {k: v for k, v in s.items() if k in _GEMINI_KEEP}
    if isinstance(s.get("properties"), Mapping):
        s["properties"] = {name: _gemini(sub, defs, seen) for name, sub in s["properties"].items()}
        if isinstance(s.get("required"), list):
            required = [r for r in dict.fromkeys(s["required"]) if r in s["properties"]]
            if required:
                s["required"] = required
            else:
                s.pop("required")
    else:
        s.pop("required", None)
    if isinstance(s.get("items"), Mapping):
        s["items"] = _gemini(s["items"], defs, seen)
    elif isinstance(s.get("items"), list):
        s["items"] = _gemini(s["items"][0], defs, seen) if s["items"] else {}
    if s.get("type") == "array" and "items" not in s:
        s["items"] = {"type": "string"}
    if isinstance(s.get("anyOf"), list):
        s["anyOf"] = [_gemini(m, defs, seen) for m in s["anyOf"]]
    return s


def transform(schema: Mapping[str, Any], provider: str) -> Schema:
    if provider == "anthropic":
        return for_anthropic(schema)
    if provider == "gemini":
        return for_gemini(schema)
    return dict(schema)
