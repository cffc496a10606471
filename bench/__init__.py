"""Benchmarks. Run all with `python -m bench`, or one with `python -m bench.<name>`."""
