"""`html_template`: the gallery, mode inference, every error, and variables that are always escaped."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import MakeRuntime
from tooldeck.builtins.html_template import TEMPLATES_DIR, gallery, parse_template


@pytest.fixture
def call(make_runtime: MakeRuntime) -> Any:
    rt = make_runtime(loading="eager", allow=["builtin:html_template"])

    def run(args: dict[str, Any]) -> Any:
        [result] = rt.invocation().run([{"id": "t", "name": "html_template", "arguments": args}])
        return result

    return run


def test_list_is_the_default_and_read_is_inferred_from_name(call: Any) -> None:
    listed = json.loads(call({}).content)
    assert [t["name"] for t in listed] == ["dashboard", "data-table", "map", "report", "slides"]
    assert all(t["description"] and "title" in t["variables"] for t in listed)
    assert json.loads(call({"mode": "list"}).content) == listed
    page = call({"name": "report", "variables": {"title": "Q3 sales", "author": "Ana"}}).content
    assert page.startswith("<!DOCTYPE html>") and "<title>Q3 sales</title>" in page and "Ana ·" in page
    assert "{{" not in page and '<html lang="en">' in page  # unfilled variables take their defaults


def test_every_error(call: Any) -> None:
    result = call({"mode": "write"})
    assert result.error_code == "html_template.unknown_mode" and result.content.endswith(
        'unknown mode "write"; available: list, read')
    result = call({"mode": "read"})
    assert result.error_code == "html_template.field_required" and result.content.endswith(
        "name is required when mode=read")
    result = call({"name": "poster"})
    assert result.error_code == "html_template.not_found" and "available: dashboard, data-table" in result.content
    result = call({"name": "map", "variables": {"subtitle": "x"}})
    assert result.error_code == "html_template.unknown_variable" and "its variables: title, lang" in result.content


def test_every_template_is_whole_and_declares_what_it_uses() -> None:
    for path in sorted(TEMPLATES_DIR.glob("*.html")):
        template = parse_template(path.read_text(encoding="utf-8"), path.name)
        page = template.render({})
        assert page.lstrip().startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
        assert 'name="viewport"' in page and "@media" in page
    with pytest.raises(ValueError, match="differ"):
        parse_template('<!--tooldeck-template {"name": "x", "description": "", "variables": {}}-->\n{{title}}', "x")


@settings(derandomize=True, max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(gallery())), data=st.data())
def test_variable_values_cannot_inject_markup(name: str, data: st.DataObject) -> None:
    template = gallery()[name]
    chosen = data.draw(st.lists(st.sampled_from(sorted(template.defaults)), unique=True))
    values = {k: data.draw(st.text(max_size=60)) for k in chosen}
    page = template.render(values)
    rest = template.render({k: "" for k in template.defaults})
    for value in values.values():
        escaped = html.escape(value, quote=True)
        assert not re.search(r"[<>\"']", escaped)
        assert escaped in page and html.unescape(escaped) == value
    assert len(re.findall(r"<[a-zA-Z!/]", page)) == len(re.findall(r"<[a-zA-Z!/]", rest))  # no new tags
