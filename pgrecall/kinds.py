"""The kinds of document row: what `pgrecall.documents.kind` holds.

Shared by the write side (the adapters name what they parsed) and the read side
(the search filter, the status counts), which must not import the worker.
"""

from __future__ import annotations

MARKDOWN = "markdown"
TEXT = "text"
CLAUDE_CONVERSATION = "claude_conversation"  # one conversation of an export: "<file>#<uuid>"
CLAUDE_EXPORT = "claude_export"  # the export file itself: a container, its conversations are its children
CLAUDE_CODE_SESSION = "claude_code_session"  # one Claude Code transcript (.jsonl), at the file's path
CHATGPT_CONVERSATION = "chatgpt_conversation"  # one conversation of a ChatGPT export: "<file>#<id>"
CHATGPT_EXPORT = "chatgpt_export"  # a ChatGPT export's conversations.json: a container like CLAUDE_EXPORT
CLAUDE_PROJECT = "claude_project"  # one project of a claude.ai export's projects.json: "<zip>#project:<uuid>"
UNSUPPORTED = "unsupported"  # a file skipped without being indexed (its type, its size, a link out of its root)

# The stage recorded with a file that was skipped, not failed: it is not for the index (its type,
# its size, a link out of its root, content no adapter reads). Any other stage is a failure. The
# run's summary (pgrecall.worker.pipeline) and `pgrecall status` (sql/queries/status.sql) both
# count by this; the kind is no guide (a note indexed before keeps its kind when it is skipped).
SKIPPED_STAGE = "detect"


def recorded_status(error_stage: str | None) -> str:
    """What a file recorded with an error at `error_stage` counts as: "skipped" or "failed"."""
    return "skipped" if error_stage == SKIPPED_STAGE else "failed"


# Kinds whose rows have chunks: what a search's `kind` filter may name.
SEARCHABLE = (MARKDOWN, TEXT, CLAUDE_CONVERSATION, CLAUDE_CODE_SESSION, CHATGPT_CONVERSATION, CLAUDE_PROJECT)
# Conversations: their retrieval units are exchanges after their context (worker.adapters.conversation).
CONVERSATIONS = (CLAUDE_CONVERSATION, CLAUDE_CODE_SESSION, CHATGPT_CONVERSATION)
# Rows that are not documents of their own: `status` counts neither (the skipped ones apart).
NOT_DOCUMENTS = (CLAUDE_EXPORT, CHATGPT_EXPORT, UNSUPPORTED)
