"""The one message every adapter gives when its framework is not installed."""

from __future__ import annotations


def missing_extra(framework: str, extra: str, error: ImportError) -> ImportError:
    """An ImportError naming the extra to install (raise it `from` the original error)."""
    return ImportError(
        f"tooldeck's {framework} adapter needs {framework}, which is not installed ({error}). "
        f"Install it with: pip install 'tooldeck[{extra}]'"
    )
