"""Secrets: values a config refers to by name and no model, record or log ever sees.

`SecretStore` keeps them in the OS keychain (`keyring`) or, where none runs, an encrypted file in the
user's config directory (`filebox.py`); `lookup` is what configs use (`${secret:NAME}` in
tooldeck.toml and mcp.json, `requires.secret`); `prompt.py` is how `store_secret` asks the user for a
value without it passing through the model. docs/configuration.md, "Secrets".
"""

from tooldeck.secrets.names import checked_name, name_problem
from tooldeck.secrets.store import SecretStore, lookup

__all__ = ["SecretStore", "checked_name", "lookup", "name_problem"]
