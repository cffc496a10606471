"""Fixtures shared by every area: `make_runtime` builds real runtimes over this test's temp dir and closes
every one it opened (runs, MCP sessions and their processes, the records file, the private loop)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import pytest

import tooldeck

if TYPE_CHECKING:  # only for annotations: these modules may move (issue 18), `tooldeck.Runtime` stays
    from tooldeck.builtins.registry import BuiltinTool
    from tooldeck.catalog.sources import ToolSource
    from tooldeck.records.port import Recorder

# The suite never reads or writes the developer's own secrets store (every Runtime redacts stored secrets'
# values, policy/stored_secrets.py): one empty file store per test session, inherited by subprocesses. Tests of
# the store set their own.
os.environ.setdefault("TOOLDECK_SECRETS_DIR", tempfile.mkdtemp(prefix="tooldeck-test-secrets-"))
os.environ.setdefault("TOOLDECK_SECRETS_BACKEND", "file")

REQUIRE_NODE = "TOOLDECK_REQUIRE_NODE"
"""Set to 1 by `make test`: a test that needs Node.js/npm fails when they are missing instead of skipping."""


def node_missing(reason: str) -> NoReturn:
    """Skip a test that needs Node.js (or npm, or what they install) — or fail it under `make test`."""
    if os.environ.get(REQUIRE_NODE) == "1":
        pytest.fail(f"{reason}. `make test` runs the whole suite ({REQUIRE_NODE}=1), the Node tests included: "
                    "install npm (Debian/Ubuntu: apt-get install -y npm) and run `make test` again.", pytrace=False)
    pytest.skip(reason)


RuntimeFactory = Callable[..., tooldeck.Runtime]
"""A test file's own factory over `make_runtime` (its tools and profile), taking profile keys."""


class MakeRuntime(Protocol):
    def __call__(self, *, home: str | Path | None = None, profile: Mapping[str, Any] | tooldeck.Profile | None = None,
                 records: bool | Recorder = True, loading: str | None = None,
                 builtins: Iterable[BuiltinTool] | None = None, sources: Iterable[ToolSource] = (),
                 confirm: Any = None, **profile_keys: Any) -> tooldeck.Runtime: ...


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[MakeRuntime]:
    """`make_runtime(...)` → a `tooldeck.Runtime` whose home is this test's temp dir (or `home`, a name under
    it or a path). `profile` is a mapping or a Profile; `loading` and any other keyword are profile keys
    merged into a mapping profile; no profile and no keys → the home's own profile file, as `Runtime` does.
    `builtins=None` gives the default builtins; `records` is the SQLite recorder on or off, or a Recorder."""
    opened: list[tooldeck.Runtime] = []

    def factory(*, home: str | Path | None = None, profile: Mapping[str, Any] | tooldeck.Profile | None = None,
                records: bool | Recorder = True, loading: str | None = None,
                builtins: Iterable[BuiltinTool] | None = None, sources: Iterable[ToolSource] = (),
                confirm: Any = None, **profile_keys: Any) -> tooldeck.Runtime:
        if loading is not None:
            profile_keys["loading"] = loading
        if profile_keys:
            if isinstance(profile, tooldeck.Profile):
                raise TypeError("give profile keys with a mapping profile, not a Profile")
            profile = {**(profile or {}), **profile_keys}
        where = tmp_path if home is None else tmp_path / home
        rt = tooldeck.Runtime(where, profile=profile, records=records, builtins=builtins, sources=sources,
                              confirm=confirm)
        opened.append(rt)
        return rt

    yield factory
    for rt in reversed(opened):
        rt.close()
