"""Per-invocation snapshots: bindings, call names, rendered schemas, budget."""
