"""The `tooldeck` command line. Each command group lives in its own module and is added in `app.py`."""

from tooldeck.cli.app import app, main

__all__ = ["app", "main"]
