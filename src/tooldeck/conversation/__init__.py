"""The conversation a run works in, for the conversation tools (docs/conversation.md): a
`ConversationSource` port (port.py) with a default over the agent loop's own runs and the chat logs
imported into the home (sources.py, chat_store.py, importer.py), the search (query.py, search.py),
world info (worldinfo.py), and what a run freezes: its input length and its world-info activation
(binding.py)."""
