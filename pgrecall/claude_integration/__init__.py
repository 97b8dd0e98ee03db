"""Claude Code and Claude Desktop: their settings entries (claude_setup, json_edits, json_text), the
plugin (claude_plugin, claude_commands/), the hooks (hooks) and what they injected (injection_ledger,
injection_use). Used by the CLI; the read side only reads the ledger."""
