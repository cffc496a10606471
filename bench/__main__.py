"""Run every `bench/*_bench.py` module's `main()` in turn."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import bench


def main() -> None:
    only = set(sys.argv[1:])
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if not info.name.endswith("_bench") or (only and info.name not in only):
            continue
        print(f"\n=== {info.name} ===", flush=True)
        importlib.import_module(f"bench.{info.name}").main()


if __name__ == "__main__":
    main()
