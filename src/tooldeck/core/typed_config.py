"""Frozen configuration classes checked against their type hints when built.

The Profile is read by every command, `tooldeck call` included; pydantic would cost that command
~100 ms of imports and class building for about twenty plain fields (issue 13). This module covers
what a config needs and no more: `str`, `int`, `float`, `bool`, `None`, `Any`, `Literal[...]`, unions,
`list[T]`, `dict[str, T]`, nested config classes; bounds (`ge`, `gt`, `le`, `lt`); unknown keys
refused; per-field checks that may convert (`field_validator`); every problem reported at once.

    @config_class
    class Limits(Config):
        calls: int = Field(default=80, ge=1)
        names: list[str] = Field(default_factory=list)

Values are checked, never coerced across kinds (no "5" for 5; an int is accepted for a float).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, TypeVar, Union

C = TypeVar("C", bound="Config")
_MISSING = dataclasses.MISSING
_BOUNDS = (("ge", lambda v, b: v >= b, "greater than or equal to"), ("gt", lambda v, b: v > b, "greater than"),
           ("le", lambda v, b: v <= b, "less than or equal to"), ("lt", lambda v, b: v < b, "less than"))


class ConfigError(ValueError):
    """Every problem of one config value: `(location, message)` pairs, location dotted (`a.b.0`)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__(self.summary())

    def summary(self) -> str:
        return "; ".join(f"{loc or '(root)'}: {msg}" for loc, msg in self.problems)


def Field(default: Any = _MISSING, *, default_factory: Callable[[], Any] | Any = _MISSING,
          ge: float | None = None, gt: float | None = None, le: float | None = None,
          lt: float | None = None) -> Any:
    """A field's default and bounds (the spelling pydantic users know)."""
    bounds = {k: v for k, v in (("ge", ge), ("gt", gt), ("le", le), ("lt", lt)) if v is not None}
    return dataclasses.field(default=default, default_factory=default_factory, metadata={"bounds": bounds})


def field_validator(*names: str) -> Callable[[Any], Any]:
    """Mark a classmethod `(cls, value) -> value` that checks (and may convert) the named fields after
    their types passed; it raises ValueError with the message to report."""

    def mark(method: Any) -> Any:
        if not isinstance(method, classmethod):
            raise TypeError("field_validator goes above @classmethod")
        method.__func__.__config_checks__ = names
        return method

    return mark


@dataclasses.dataclass(frozen=True)
class _Spec:
    name: str
    hint: Any
    default: Any
    factory: Any
    bounds: Mapping[str, float]
    checks: tuple[Callable[[Any], Any], ...]


class Config:
    """Base of the config classes; decorate each subclass with `config_class`."""

    __specs__: ClassVar[dict[str, _Spec]]
    __fields_set__: frozenset[str]

    def __init__(self, **values: Any) -> None:
        problems: list[tuple[str, str]] = []
        checked = _check_fields(type(self), type(self).prepare(values), "", problems)
        if problems:
            raise ConfigError(problems)
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "__fields_set__", frozenset(values))

    @classmethod
    def from_mapping(cls: type[C], data: Any) -> C:
        """Build from parsed TOML/JSON; raises ConfigError listing every problem."""
        problems: list[tuple[str, str]] = []
        value = _check(data, cls, "", problems)
        if problems:
            raise ConfigError(problems)
        return typing.cast(C, value)

    @classmethod
    def prepare(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The given values before they are checked (override to fill defaults that depend on other keys);
        `fields_set` still names only what was given."""
        return values

    @property
    def fields_set(self) -> frozenset[str]:
        """The fields given explicitly (the rest are defaults)."""
        return self.__fields_set__

    def replace(self: C, **changes: Any) -> C:
        """A copy with `changes` applied and checked; the fields set explicitly stay explicit."""
        given = {name: getattr(self, name) for name in self.__fields_set__}
        return type(self)(**{**given, **changes})


def config_class(cls: type[C]) -> type[C]:
    """Make `cls` a frozen dataclass (repr, eq, fields()) whose constructor checks its fields."""
    data_cls = dataclasses.dataclass(frozen=True, init=False, eq=True)(cls)
    hints = typing.get_type_hints(data_cls)
    checks: dict[str, list[Callable[[Any], Any]]] = {}
    for klass in reversed(data_cls.__mro__):
        for attr in vars(klass).values():
            if isinstance(attr, classmethod) and getattr(attr.__func__, "__config_checks__", None):
                for name in attr.__func__.__config_checks__:
                    checks.setdefault(name, []).append(attr.__get__(None, data_cls))
    specs: dict[str, _Spec] = {}
    for f in dataclasses.fields(data_cls):
        specs[f.name] = _Spec(f.name, hints[f.name], f.default, f.default_factory,
                              f.metadata.get("bounds", {}), tuple(checks.pop(f.name, ())))
    if checks:
        raise TypeError(f"field_validator names unknown fields: {sorted(checks)}")
    data_cls.__specs__ = specs
    return data_cls


def _check_fields(cls: type[Config], values: Mapping[str, Any], loc: str,
                  problems: list[tuple[str, str]]) -> dict[str, Any]:
    specs = cls.__specs__
    for key in values:
        if key not in specs:
            problems.append((_join(loc, str(key)), f"unknown key (the keys are {', '.join(specs)})"))
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        where = _join(loc, name)
        if name in values:
            before = len(problems)
            value = _check(values[name], spec.hint, where, problems)
            if len(problems) == before:
                value = _bounded(value, spec.bounds, where, problems)
            if len(problems) == before:
                for check in spec.checks:
                    try:
                        value = check(value)
                    except ValueError as exc:
                        problems.append((where, str(exc)))
                        break
        elif spec.default is not _MISSING:
            value = spec.default
        elif spec.factory is not _MISSING:
            value = spec.factory()
        else:
            problems.append((where, "missing (this key is required)"))
            continue
        out[name] = value
    return out


def _bounded(value: Any, bounds: Mapping[str, float], loc: str, problems: list[tuple[str, str]]) -> Any:
    for key, holds, words in _BOUNDS:
        if key in bounds and not holds(value, bounds[key]):
            problems.append((loc, f"should be {words} {bounds[key]}, got {value!r}"))
    return value


def _check(value: Any, hint: Any, loc: str, problems: list[tuple[str, str]]) -> Any:
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if not any(value == c and type(value) is type(c) for c in choices):
            problems.append((loc, f"should be one of {', '.join(map(repr, choices))}, got {value!r}"))
        return value
    if origin in (Union, types.UnionType):
        for option in typing.get_args(hint):
            attempt: list[tuple[str, str]] = []
            converted = _check(value, option, loc, attempt)
            if not attempt:
                return converted
        problems.append((loc, f"should be {_describe(hint)}, got {_kind(value)}"))
        return value
    if origin is list:
        if not isinstance(value, list | tuple):
            problems.append((loc, f"should be a list, got {_kind(value)}"))
            return value
        (item,) = typing.get_args(hint)
        return [_check(v, item, _join(loc, str(i)), problems) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            problems.append((loc, f"should be a table (mapping), got {_kind(value)}"))
            return value
        key_hint, item = typing.get_args(hint)
        out = {}
        for k, v in value.items():
            out[_check(k, key_hint, _join(loc, str(k)), problems)] = _check(v, item, _join(loc, str(k)), problems)
        return out
    if isinstance(hint, type) and issubclass(hint, Config):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            problems.append((loc, f"should be a table (mapping), got {_kind(value)}"))
            return value
        before = len(problems)
        fields = _check_fields(hint, hint.prepare(dict(value)), loc, problems)
        if len(problems) != before:
            return value
        built = hint.__new__(hint)
        for name, v in fields.items():
            object.__setattr__(built, name, v)
        object.__setattr__(built, "__fields_set__", frozenset(value))
        return built
    if _is_instance(value, hint):
        return float(value) if hint is float else value
    problems.append((loc, f"should be {_describe(hint)}, got {_kind(value)}"))
    return value


def _is_instance(value: Any, hint: Any) -> bool:
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # True is not a number here
    if hint is float:
        return isinstance(value, int | float)
    return isinstance(hint, type) and isinstance(value, hint)


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(h) for h in typing.get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(hint)))
    if origin is list:
        return "a list"
    if origin is dict:
        return "a table (mapping)"
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if len(repr(value)) <= 60 else type(value).__name__


def _join(loc: str, part: str) -> str:
    return f"{loc}.{part}" if loc else part
