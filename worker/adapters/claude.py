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
from pgrecall.worker.adapters import conversation as units
from pgrecall.worker.document import ParsedDocument, Section, latest, moment, named

SPEAKERS = {"human": "User", "assistant": "Claude"}


def looks_like_export(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(c, dict) and "chat_messages" in c for c in value)


def unwrap(value: Any) -> Any:
    """Older exports wrap the conversations in an object ({"account": ..., "conversations": [...]});
    today's are the bare array."""
    if isinstance(value, dict) and isinstance(value.get("conversations"), list):
        return value["conversations"]
    return value


def project_uuid(conversation: dict[str, Any]) -> str | None:
    """The project a conversation belongs to, where the export says so: `project_uuid`,
    or a `project` object with its `uuid`."""
    project = conversation.get("project")
    value = conversation.get("project_uuid") or (project.get("uuid") if isinstance(project, dict) else None)
    return value.strip()[:MAX_UUID_CHARS] if isinstance(value, str) and value.strip() else None


def parse_export(path: str, text: str) -> list[ParsedDocument]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    value = unwrap(value)
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
    said: list[units.Message] = []
    attachments: list[Section] = []
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError(f"conversation {uuid}: a message is not an object")
        sender = _string(message.get("sender")) or "unknown"
        when = moment(message.get("created_at")) or moment(conversation.get("created_at"))
        said.append(units.Message(SPEAKERS.get(sender, sender), _message_text(message), when, sender == "human"))
        for attachment in _list(message.get("attachments")):
            if not isinstance(attachment, dict):
                continue
            extracted = _string(attachment.get("extracted_content"))
            if extracted:
                file_name = _string(attachment.get("file_name")) or "attachment"
                attachments.append(Section(heading=f"{name} > attachment {file_name}", text=extracted))
    sections = units.sections(name, said) + attachments
    canonical = json.dumps(conversation, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    metadata: dict[str, Any] = {
        "conversation_uuid": uuid,
        "created_at": conversation.get("created_at") if isinstance(conversation.get("created_at"), str) else None,
        "updated_at": conversation.get("updated_at") if isinstance(conversation.get("updated_at"), str) else None,
        "messages": len(messages),
    }
    if project := project_uuid(conversation):
        metadata["project_uuid"] = project
    # Its last message's time; a conversation without message times, its own.
    message_times = (m.get("created_at") for m in messages if isinstance(m, dict))
    occurred = latest(message_times) or moment(metadata["updated_at"]) or moment(metadata["created_at"])
    return ParsedDocument(
        path=f"{path}#{uuid}",
        kind=kinds.CLAUDE_CONVERSATION,
        title=name,
        content_hash=hashlib.sha256(canonical).hexdigest(),
        sections=sections,
        metadata=metadata,
        # A claude.ai project is named in projects.json, beside conversations.json in a zip
        # export (export_zip sets it); conversations.json alone holds only its uuid.
        project=named(conversation["project"].get("name")) if isinstance(conversation.get("project"), dict) else None,
        occurred_at=occurred,
    )


def parse_project(path: str, project: dict[str, Any]) -> ParsedDocument:
    """One project of projects.json: its name, description, prompt template (the project's
    instructions) and the text of its docs, each a section."""
    if not isinstance(project, dict):
        raise ValueError("a project is not an object")
    uuid = _string(project.get("uuid"))
    if not uuid:
        raise ValueError("a project has no uuid")
    if len(uuid) > MAX_UUID_CHARS:
        raise ValueError(f"a project's uuid is longer than {MAX_UUID_CHARS} characters")
    name = _string(project.get("name")) or "Untitled project"
    sections = [
        Section(heading=f"{name} > {label}", text=text)
        for label, text in (
            ("description", _string(project.get("description"))),
            ("prompt template", _string(project.get("prompt_template"))),
        )
        if text
    ]
    docs = [d for d in _list(project.get("docs")) if isinstance(d, dict)]
    for doc in docs:
        content = _string(doc.get("content"))
        if content:
            file_name = _string(doc.get("filename")) or "document"
            sections.append(Section(heading=f"{name} > doc {file_name}", text=content))
    canonical = json.dumps(project, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return ParsedDocument(
        project=named(name),
        occurred_at=moment(project.get("updated_at")) or moment(project.get("created_at")),
        path=f"{path}#project:{uuid}",
        kind=kinds.CLAUDE_PROJECT,
        title=name,
        content_hash=hashlib.sha256(canonical).hexdigest(),
        sections=sections,
        metadata={
            "project_uuid": uuid,
            "created_at": project.get("created_at") if isinstance(project.get("created_at"), str) else None,
            "updated_at": project.get("updated_at") if isinstance(project.get("updated_at"), str) else None,
            "docs": len(docs),
        },
    )
