"""Records: the store port, its SQLite adapter, and replay into provider formats."""
