"""The Profile's `builtins` key: which file family an invocation offers, over one workspace engine."""

from __future__ import annotations

import pytest

from tests.builtins.agenvoy_files.support import Session, session
from tests.conftest import MakeRuntime
from tooldeck.core.errors import ProfileError

AGENVOY = {"find_files", "read_files", "edit_file", "remove_file", "restore_file", "file_history", "run_command"}
TAURITAVERN = {"workspace_list_files", "workspace_search_files", "workspace_read_file", "workspace_write_file",
               "workspace_apply_patch", "workspace_remove_file", "workspace_restore_file", "workspace_shell"}


def names(s: Session) -> set[str]:
    return {t.get("function", t).get("name") for t in s.rt.invocation(run_id=s.run_id).tools()}


def test_tauritavern_is_the_default(make_runtime: MakeRuntime) -> None:
    s = Session(make_runtime(records=False))
    assert names(s) >= TAURITAVERN and not AGENVOY & names(s)
    assert s.call("read_files", {"files": [{"path": "output/a.md"}]}).error_code == "tool.unknown_tool"


def test_agenvoy_offers_its_family_only(make_runtime: MakeRuntime) -> None:
    s = session(make_runtime)
    got = names(s)
    assert got >= AGENVOY and not TAURITAVERN & got
    assert {"workspace_commit", "workspace_finish", "dice_roll"} <= got  # the tools both families share
    assert s.call("workspace_read_file", {"path": "output/a.md"}).error_code == "tool.unknown_tool"


def test_both_offers_both(make_runtime: MakeRuntime) -> None:
    s = session(make_runtime, builtins="both")
    assert names(s) >= AGENVOY | TAURITAVERN


def test_an_explicit_allow_of_the_other_family_is_left_out_with_a_diagnostic(make_runtime: MakeRuntime) -> None:
    rt = make_runtime(records=False, allow=["builtin:find_files", "builtin:workspace.read_file"])
    inv = rt.invocation()
    assert [t.get("function", t)["name"] for t in inv.tools()] == ["workspace_read_file"]
    [diag] = [d for d in inv.diagnostics if d.code == "tool.family_excluded"]
    assert "builtin:find_files" in diag.message and 'builtins = "both"' in diag.message


def test_an_unknown_family_is_a_profile_error(make_runtime: MakeRuntime) -> None:
    with pytest.raises(ProfileError) as caught:
        make_runtime(records=False, profile={"builtins": "claude"})
    assert caught.value.code == "profile.invalid" and "builtins" in str(caught.value)


def test_one_engine_under_both_families(make_runtime: MakeRuntime) -> None:
    """A file written by edit_file is read by workspace_read_file, whose read lets edit_file overwrite it;
    the versions edit_file keeps are the ones workspace_restore_file puts back."""
    s = session(make_runtime, builtins="both")
    s.ok("edit_file", {"path": "output/a.md", "content": "one\n"})
    s.ok("workspace_read_file", {"path": "output/a.md"})
    s.ok("edit_file", {"path": "output/a.md", "content": "two\n"})
    s.ok("workspace_restore_file", {"path": "output/a.md", "version": 1})
    assert (s.root / "output/a.md").read_text() == "one\n"
    refused = s.call("edit_file", {"path": "output/a.md", "content": "three\n"})
    assert refused.error_code == "workspace.write_requires_read"
