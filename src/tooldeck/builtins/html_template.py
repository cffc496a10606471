"""`html_template` (Agenvoy's tool of the same name): a gallery of worked, standalone HTML files to start a
deliverable from (report, dashboard, table, map, slides), so that a model writes on a layout that
already handles small screens, print and resizing instead of inventing one.

`mode` list | read (omitted: `name` → read, else list). list → `[{name, description, variables}]`.
read: `name`, `variables` (`{name: text}`) → the template's HTML with each `{{variable}}` replaced by its
value, HTML-escaped (quotes too: placeholders also sit in attributes), or by the template's default. A
variable the template does not have is an error naming those it has. The files are
`builtins/html_templates/*.html`, each opening with `<!--tooldeck-template {json}-->`.
"""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tooldeck.builtins.registry import BuiltinTool
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput

MODES: Final = ("list", "read")
UNKNOWN_MODE: Final = "html_template.unknown_mode"
FIELD_REQUIRED: Final = "html_template.field_required"
NOT_FOUND: Final = "html_template.not_found"
UNKNOWN_VARIABLE: Final = "html_template.unknown_variable"
MAX_VALUE_CHARS: Final = 10_000
TEMPLATES_DIR: Final = Path(__file__).with_name("html_templates")
_HEAD: Final = re.compile(r"\A<!--tooldeck-template (\{.*?\})-->\n", re.DOTALL)
_PLACEHOLDER: Final = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    description: str
    defaults: dict[str, str]
    body: str

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "variables": list(self.defaults)}

    def render(self, values: dict[str, str]) -> str:
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            return html.escape(values[name], quote=True) if name in values else html.escape(self.defaults[name])

        return _PLACEHOLDER.sub(sub, self.body)


def parse_template(text: str, source: str) -> Template:
    head = _HEAD.match(text)
    if head is None:
        raise ValueError(f"{source}: does not open with <!--tooldeck-template {{...}}-->")
    meta = json.loads(head.group(1))
    body = text[head.end():]
    defaults = {str(k): str(v) for k, v in meta["variables"].items()}
    used = set(_PLACEHOLDER.findall(body))
    if used != set(defaults):
        raise ValueError(f"{source}: placeholders {sorted(used)} and declared variables {sorted(defaults)} differ")
    return Template(str(meta["name"]), str(meta["description"]), defaults, body)


@functools.cache
def gallery() -> dict[str, Template]:
    """The templates by name, in file-name order (read once per process)."""
    out: dict[str, Template] = {}
    for path in sorted(TEMPLATES_DIR.glob("*.html")):
        template = parse_template(path.read_text(encoding="utf-8"), path.name)
        out[template.name] = template
    return out


def html_template(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    mode = args.get("mode") or ("read" if args.get("name") else "list")
    if mode not in MODES:
        raise ToolCallError(UNKNOWN_MODE, f'unknown mode "{mode}"; available: {", ".join(MODES)}')
    templates = gallery()
    if mode == "list":
        listed = [t.summary() for t in templates.values()]
        return ToolOutput(json_text(listed), {"templates": listed})
    name = str(args.get("name") or "").strip()
    if not name:
        raise ToolCallError(FIELD_REQUIRED, "name is required when mode=read")
    template = templates.get(name)
    if template is None:
        raise ToolCallError(NOT_FOUND, f'no template "{name[:80]}"; available: {", ".join(templates)}')
    values = args.get("variables") or {}
    unknown = sorted(set(values) - set(template.defaults))
    if unknown:
        raise ToolCallError(UNKNOWN_VARIABLE, f'template "{name}" has no variable {unknown[0]!r}; its variables: '
                            f'{", ".join(template.defaults)}')
    return ToolOutput(template.render(values), {"name": name, "variables": sorted(values)})


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("html_template"),
    title="HTML templates",
    description="Worked standalone HTML files to start a deliverable from (report, dashboard with a d3 chart, "
                "sortable table, MapLibre map, slides), responsive and print-ready. mode list shows them; mode "
                "read (name, variables?) returns one with its {{variables}} filled (values are escaped), to save "
                "with the file tools and then edit.",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "description": "list | read; omitted: name → read, else list."},
            "name": {"type": "string", "description": "A template's name (read)."},
            "variables": {"type": "object", "additionalProperties": {"type": "string", "maxLength": MAX_VALUE_CHARS},
                          "description": "Values for the template's variables (plain text; list shows them)."},
        },
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(read_only=True, idempotent=True, concurrency_safe=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, html_template, blocking=True)]  # the first call reads the gallery
