"""`tooldeck` with a part of the served call's path stubbed out: a diagnostic for `bench/serve_shares_bench.py`,
never a configuration (what it leaves out is part of the protocol or of the records).

    python bench/serve_stubbed.py PART tooldeck-arguments…

PART `sdk-checks`: the SDK server kernel's per-version passes over a `tools/call` (the surface validation of the
request, the `_meta` read through `RequestParams`, the surface validation and dump of the result): what they cost a
served call, measured as the difference.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

PARTS = ("sdk-checks",)


def _without_sdk_checks() -> None:
    from mcp.server import runner
    from mcp_types import methods

    serialize = methods.serialize_server_result

    def shaped(method: str, version: str, data: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        return dict(data) if method == "tools/call" else serialize(method, version, data, **options)

    methods.validate_client_request = lambda method, version, params, **options: None  # type: ignore[assignment]
    methods.serialize_server_result = shaped  # type: ignore[assignment]
    runner._extract_meta = lambda params: None  # type: ignore[assignment]


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in PARTS:
        sys.exit(f"usage: python bench/serve_stubbed.py {{{'|'.join(PARTS)}}} tooldeck-arguments...")
    _without_sdk_checks()
    from tooldeck.cli.app import main

    sys.argv = ["tooldeck", *sys.argv[2:]]
    sys.exit(main())
