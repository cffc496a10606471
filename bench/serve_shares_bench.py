"""What a call through `tooldeck serve --stdio` spends, by part, measured as differences in one run.

The official client calls the fixture server's `echo` (round-robin, medians of batches): directly; through the
do-nothing line relay (`bench/line_relay.py`: the floor of any process in the middle); through `tooldeck serve`
(records on, its default); through serve with `--no-records`; through serve with the SDK server kernel's
per-version checks of a `tools/call` stubbed out; and through serve with all of tooldeck's own work on a call
stubbed out, the lane handing each call straight to the upstream connection (the floor of serve's own process).
The stubs are `bench/serve_stubbed.py`'s, diagnostics only: what they leave out is the protocol's or tooldeck's.
Each prints its wall time per call as a ratio to the direct call, the CPU per call of the process in the middle
and of the fixture behind it (the scheduler's nanoseconds, every thread).

    python -m bench.serve_shares_bench
"""

from __future__ import annotations

import asyncio
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.mcp_bench import (
    FIXTURE,
    PY,
    Variants,
    _children,
    _children_of,
    _runtime,
    _serve_call,
    add_direct,
    add_relay,
    interleaved_with_cpu,
    print_with_cpu,
)

INNER = 20
REPEATS = 31
STUBBED = Path(__file__).with_name("serve_stubbed.py")
TOOLDECK = str(Path(PY).with_name("tooldeck"))


def _serve_command(home: Path, extra: list[str], stub: str | None) -> list[str]:
    args = ["serve", "--stdio", "--home", str(home), "--scene", "chat", *extra]
    return [PY, str(STUBBED), stub, *args] if stub else [TOOLDECK, *args]


async def measure(tmp: Path) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """(wall ms per call, the middle process's CPU µs per call, its fixture's CPU µs per call) by variant."""
    variants: Variants = {}
    middle: dict[str, int] = {}
    fixture: dict[str, int] = {}
    async with AsyncExitStack() as stack:
        await add_direct(stack, variants, fixture)
        await add_relay(stack, "relay", variants, middle, fixture)
        for name, extra, stub in (("serve", [], None), ("serve --no-records", ["--no-records"], None),
                                  ("serve, SDK checks stubbed", [], "sdk-checks"),
                                  ("serve, tooldeck's work stubbed", [], "tooldeck-work")):
            home = tmp / name.replace(" ", "_").replace(",", "")
            _runtime(home, {"command": PY, "args": [str(FIXTURE)]}).close()
            (home / "profile.toml").write_text('loading = "eager"\n')  # tools called by name
            [command, *args] = _serve_command(home, extra, stub)
            before = _children(b"serve")
            client = await stack.enter_async_context(Client(StdioServerParameters(command=command, args=args),
                                                            cache=None))
            [middle[name]] = _children(b"serve") - before
            variants[name] = _serve_call(client)
        for fn in variants.values():  # warm up; a server behind serve starts on its first call
            for _ in range(5):
                await fn()
        for name, pid in middle.items():
            [fixture[name]] = _children_of(pid, FIXTURE.name.encode())
        return await interleaved_with_cpu(variants, middle, fixture, INNER, REPEATS)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wall, middle, fixture = asyncio.run(measure(Path(tmp)))
    print_with_cpu(wall, middle, fixture, INNER, REPEATS)
    served = middle["serve"]
    print(f"  serve's CPU less the relay's: {served - middle['relay']:.0f} µs/call; of it records "
          f"{served - middle['serve --no-records']:.0f} µs, the SDK kernel's per-version checks "
          f"{served - middle['serve, SDK checks stubbed']:.0f} µs; the fixture behind serve "
          f"{fixture['serve'] - fixture['direct']:+.0f} µs, behind the relay "
          f"{fixture['relay'] - fixture['direct']:+.0f} µs against direct")
    stubbed = "serve, tooldeck's work stubbed"
    floor = wall[stubbed] / wall["direct"]
    work = (wall["serve"] - wall[stubbed]) / wall["direct"]
    print(f"  the floor of serve's process (tooldeck's work stubbed): {floor:.2f}× direct, its CPU "
          f"{middle[stubbed]:.0f} µs/call; tooldeck's work on top of it: {work:.2f}× of a direct call "
          f"({served - middle[stubbed]:.0f} µs/call of serve's CPU); under the 1.5× target it may take "
          f"{1.5 - floor:.2f}×")


if __name__ == "__main__":
    main()
