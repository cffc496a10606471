"""Subprocess: a real Runtime with records on runs one quick round, then a batch of slow calls,
and waits to be killed. Usage: python _kill_worker.py HOME MARKER_DIR"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tooldeck.core.descriptors import ToolAnnotations
from tooldeck.runtime import Runtime


def main() -> None:
    home, markers = Path(sys.argv[1]), Path(sys.argv[2])
    rt = Runtime(home, records=True)

    @rt.tool("test", "quick", annotations=ToolAnnotations(concurrency_safe=True))
    async def quick(n: int = 0) -> str:
        """Answer at once."""
        return f"quick {n}"

    @rt.tool("test", "transfer", annotations=ToolAnnotations(concurrency_safe=True, mutating=True))
    async def transfer(n: int) -> str:
        """Slow, mutating."""
        (markers / f"started-{n}").write_text("x")
        await asyncio.sleep(120)
        return f"transferred {n}"

    inv = rt.invocation("openai", run_id="run_kill")
    print(inv.id, flush=True)
    inv.run([{"id": "q1", "name": "quick", "arguments": '{"n": 1}'}, {"id": "q2", "name": "quick"}])
    inv.run([{"id": f"t{n}", "name": "transfer", "arguments": f'{{"n": {n}}}'} for n in range(4)]
            + [{"id": "bad", "name": "transfer", "arguments": '{"n": '}])


if __name__ == "__main__":
    main()
