"""A fixed number of turns through `Invocation.arun`, for instruction counts (callgrind), which vary far
less than times on a shared machine. The per-turn count is the difference between two sizes:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python -m bench.turn_loop 1200 1 on      # and 200 1 on; (1200 - 200) / 1000 per turn

Arguments: turns, calls per turn, records on|off. The tool is the records bench's `add`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from bench.records_bench import ARGS, _runtime


async def _turns(inv: object, calls: list[dict[str, str]], n: int) -> None:
    for _ in range(n):
        inv.gate.budget.total = 0  # type: ignore[attr-defined]
        out = await inv.arun(calls)  # type: ignore[attr-defined]
    assert [r.content for r in out] == ["3"] * len(calls), out  # a refused last turn would count other work


def main() -> None:
    n, size, records = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "on"
    with tempfile.TemporaryDirectory() as tmp:
        rt = _runtime(Path(tmp), records)
        calls = [{"id": f"call_{i}", "name": "add", "arguments": ARGS} for i in range(size)]
        asyncio.run(_turns(rt.invocation(), calls, n))
        rt.close()


if __name__ == "__main__":
    main()
