import tooldeck


def test_workspace_descriptions_follow_the_profile_roots(tmp_path):
    rt = tooldeck.open(tmp_path, profile={"workspace": {"writable": ["work", "tmp"], "read_only": ["tool-results"],
                                                        "body_file": "work/reply.md"}})
    tools = {t["function"]["name"]: t["function"]["description"] for t in rt.invocation().tools()}
    listing = tools["workspace_list_files"]
    assert "Writable folders: `work/`, `tmp/`; read-only: `tool-results/`" in listing
    assert "`output/" not in listing and "`work/reply.md`" in listing
    assert "default `work/reply.md`" in tools["workspace_commit"]
    default = {t["function"]["name"]: t["function"]["description"] for t in tooldeck.open(tmp_path / "d")
               .invocation().tools()}
    assert "Writable folders: `output/`" in default["workspace_list_files"]
