"""A claude.ai data export's conversations.json: one document per conversation.

A conversation is keyed by its uuid (path "conversations.json#<uuid>") and
hashed on its own, so re-importing a grown export re-embeds only the
conversations that changed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pgrecall.errors import UnsupportedFile
from pgrecall.worker.document import ParsedDocument, Section

KIND = "claude_conversation"


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


def _message_text(message: dict[str, Any]) -> str:
    text = message.get("text") or ""
    if text.strip():
        return text.strip()
    blocks = message.get("content") or []
    parts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def parse_conversation(path: str, conversation: dict[str, Any]) -> ParsedDocument:
    uuid = conversation.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise ValueError("a conversation has no uuid")
    name = (conversation.get("name") or "").strip() or "Untitled conversation"
    sections: list[Section] = []
    for message in conversation.get("chat_messages") or []:
        if not isinstance(message, dict):
            raise ValueError(f"conversation {uuid}: a message is not an object")
        sender = message.get("sender") or "unknown"
        text = _message_text(message)
        if text:
            sections.append(Section(heading=f"{name} > {sender}", text=text))
        for attachment in message.get("attachments") or []:
            extracted = (attachment or {}).get("extracted_content") or ""
            if extracted.strip():
                file_name = attachment.get("file_name") or "attachment"
                sections.append(Section(heading=f"{name} > attachment {file_name}", text=extracted.strip()))
    canonical = json.dumps(conversation, sort_keys=True, ensure_ascii=False).encode()
    return ParsedDocument(
        path=f"{path}#{uuid}",
        kind=KIND,
        title=name,
        content_hash=hashlib.sha256(canonical).hexdigest(),
        sections=sections,
        metadata={
            "conversation_uuid": uuid,
            "created_at": conversation.get("created_at"),
            "updated_at": conversation.get("updated_at"),
            "messages": len(conversation.get("chat_messages") or []),
        },
    )
