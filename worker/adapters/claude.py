"""A claude.ai data export's conversations.json: one document per conversation.

A conversation is keyed by its uuid (path "conversations.json#<uuid>") and
hashed on its own, so re-importing a grown export re-embeds only the
conversations that changed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.worker.document import ParsedDocument, Section


def looks_like_export(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(c, dict) and "chat_messages" in c for c in value)


def parse_export(path: str, text: str) -> list[ParsedDocument]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not looks_like_export(value):
        raise UnsupportedFile("JSON file that is not a Claude conversation export")
    documents: dict[str, ParsedDocument] = {}
    for conversation in value:
        document = parse_conversation(path, conversation)
        documents[document.path] = document  # a uuid listed twice: the later entry wins
    return list(documents.values())


MAX_UUID_CHARS = 200


def _string(value: Any) -> str:
    """A field that should hold text: anything else (a number, a list, null) counts as absent."""
    return value.strip() if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _message_text(message: dict[str, Any]) -> str:
    text = _string(message.get("text"))
    if text:
        return text
    parts = [
        _string(b.get("text")) for b in _list(message.get("content")) if isinstance(b, dict) and b.get("type") == "text"
    ]
    return "\n\n".join(p for p in parts if p)


def parse_conversation(path: str, conversation: dict[str, Any]) -> ParsedDocument:
    """One conversation. Fields of the wrong type (a `name` that is a number, an
    attachment that is a string) are ignored like missing ones: the rest of the
    conversation, and of the export, is still worth indexing."""
    uuid = conversation.get("uuid")
    if not isinstance(uuid, str) or not uuid.strip():
        raise ValueError("a conversation has no uuid")
    if len(uuid) > MAX_UUID_CHARS:
        raise ValueError(f"a conversation's uuid is longer than {MAX_UUID_CHARS} characters")
    name = _string(conversation.get("name")) or "Untitled conversation"
    messages = conversation.get("chat_messages")
    messages = [] if messages is None else messages
    if not isinstance(messages, list):
        raise ValueError(f"conversation {uuid}: chat_messages is not a list")
    sections: list[Section] = []
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError(f"conversation {uuid}: a message is not an object")
        sender = _string(message.get("sender")) or "unknown"
        text = _message_text(message)
        if text:
            sections.append(Section(heading=f"{name} > {sender}", text=text))
        for attachment in _list(message.get("attachments")):
            if not isinstance(attachment, dict):
                continue
            extracted = _string(attachment.get("extracted_content"))
            if extracted:
                file_name = _string(attachment.get("file_name")) or "attachment"
                sections.append(Section(heading=f"{name} > attachment {file_name}", text=extracted))
    canonical = json.dumps(conversation, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return ParsedDocument(
        path=f"{path}#{uuid}",
        kind=kinds.CLAUDE_CONVERSATION,
        title=name,
        content_hash=hashlib.sha256(canonical).hexdigest(),
        sections=sections,
        metadata={
            "conversation_uuid": uuid,
            "created_at": conversation.get("created_at") if isinstance(conversation.get("created_at"), str) else None,
            "updated_at": conversation.get("updated_at") if isinstance(conversation.get("updated_at"), str) else None,
            "messages": len(messages),
        },
    )
