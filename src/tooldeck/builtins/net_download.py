"""`download_file` (Agenvoy's tool of the same name) into the workspace, through the SSRF guard that
Agenvoy's own version lacks.

`url`, `output_file` (a workspace path; a bare file name goes into `output/`; default: the URL's last
path segment), `timeout` (default 120 s, at most 600). The file must not exist yet; it is written at
most 64 MiB (the workspace's file limit), and the answer carries its size and sha256. A non-2xx
status is an error quoting up to 8 KiB of the body; nothing is written then.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import unquote

from tooldeck.builtins.net import clamp_timeout, http_errors, read_capped, reason
from tooldeck.builtins.registry import BuiltinTool
from tooldeck.builtins.workspace_common import workspace, write_new_file
from tooldeck.catalog.sources import CallContext
from tooldeck.core.descriptors import ToolAnnotations, ToolDescriptor
from tooldeck.core.errors import ToolCallError
from tooldeck.core.ids import ToolId
from tooldeck.core.jsontext import json_text
from tooldeck.core.results import ToolOutput
from tooldeck.workspace.limits import MAX_FILE_BYTES

DEFAULT_DOWNLOAD_TIMEOUT_S: Final = 120.0
MAX_DOWNLOAD_TIMEOUT_S: Final = 600.0
ERROR_BODY_BYTES: Final = 8 * 1024
HTTP_STATUS: Final = "http.status"
TOO_LARGE: Final = "http.too_large"
FILE_EXISTS: Final = "http.file_exists"


def default_path(url_path: str) -> str:
    name = unquote(url_path.rstrip("/").rsplit("/", 1)[-1]) or "download"
    if name.startswith(".") or "/" in name or "\\" in name:
        name = "download"
    return f"output/{name}"


async def download(args: dict[str, Any], ctx: CallContext) -> ToolOutput:
    from tooldeck.net.clients import client_for
    from tooldeck.net.guard import check_url

    url = check_url(args["url"])
    raw = args.get("output_file") or default_path(url.path)
    rel = raw if "/" in raw else f"output/{raw}"
    store, policy = workspace(ctx)
    loc = store.locate(policy, rel, write=True)
    if store.kind(loc) is not None:
        raise ToolCallError(FILE_EXISTS, f"`{loc.shown}` already exists; nothing was downloaded. Give another "
                            "`output_file`, or remove the old file first.")
    timeout = clamp_timeout(args.get("timeout"), DEFAULT_DOWNLOAD_TIMEOUT_S, MAX_DOWNLOAD_TIMEOUT_S)
    with http_errors(f"{url} did not finish within {timeout:g} s; nothing was written. Retry with a larger "
                     "`timeout` (at most 600).", lambda exc: f"downloading {url} failed: {reason(exc)}; nothing was "
                     "written."):
        client = client_for(ctx.run, ctx.invocation.profile.net_allow)
        async with client.stream("GET", url, timeout=timeout) as response:
            if not response.is_success:
                body, _ = await read_capped(response, ERROR_BODY_BYTES)
                raise ToolCallError(HTTP_STATUS, f"http {response.status_code}: "
                                    f"{body.decode('utf-8', 'replace').strip() or '(empty body)'}")
            data, truncated = await read_capped(response, MAX_FILE_BYTES)
            status = response.status_code
    if truncated:
        raise ToolCallError(TOO_LARGE, f"{url} is larger than {MAX_FILE_BYTES // 1048576} MiB, the workspace's "
                            "file limit; nothing was written (the download was stopped there).")
    sha256, effect = await write_new_file(store, loc, data, chars=None, exists=ToolCallError(
        FILE_EXISTS, f"`{loc.shown}` appeared while the file was downloading; nothing was written. Give another "
        "`output_file`."))
    answer = {"ok": True, "url": str(url), "output_file": loc.shown, "size_bytes": len(data),
              "status_code": status, "sha256": sha256}
    return ToolOutput(json_text(answer), answer, resource_refs=[loc.shown], effects=[effect])


DESCRIPTOR = ToolDescriptor(
    id=ToolId.builtin("download_file"),
    title="Download a file",
    description="Download a public http(s) URL into a new workspace file (at most 64 MiB) and return its size "
                "and sha256. `output_file` is a workspace path; a bare name goes into `output/`; default: the "
                "URL's file name. Private, loopback and metadata addresses are refused.",
    input_schema={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "Absolute http:// or https:// URL."},
            "output_file": {"type": "string", "description": "Workspace path of the new file, e.g. "
                            "`output/data.csv`."},
            "timeout": {"type": "number", "description": "Seconds, default 120, at most 600."},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    annotations=ToolAnnotations(mutating=True),
)

TOOLS = [BuiltinTool(DESCRIPTOR, download)]
