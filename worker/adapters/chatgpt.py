"""A ChatGPT data export's conversations.json: one document per conversation.

A conversation is a tree of messages (`mapping`: node id -> {message, parent, children});
edits and regenerations are branches of it. What is indexed is the branch shown last,
from `current_node` up through the parents, and of it only the text the person and the
assistant wrote: code run by tools, browsing results, hidden system context and
reasoning summaries are left out. A conversation is keyed by its id
("conversations.json#<id>") and hashed on its own, like a claude.ai export's.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from typing import Any

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.worker.adapters import conversation as units
from pgrecall.worker.document import ParsedDocument, latest, moment

MAX_ID_CHARS = 200
ROLES = ("user", "assistant")
SPEAKERS = {"user": "User", "assistant": "ChatGPT"}
TEXT_CONTENT_TYPES = ("text", "multimodal_text")


def looks_like_chatgpt_export(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(c, dict) and isinstance(c.get("mapping"), dict) for c in value)
    )


def parse_export(path: str, text: str) -> list[ParsedDocument]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not looks_like_chatgpt_export(value):
        raise UnsupportedFile("JSON file that is not a ChatGPT conversation export")
    documents: dict[str, ParsedDocument] = {}
    for conversation in value:
        document = parse_conversation(path, conversation)
        documents[document.path] = document  # an id listed twice: the later entry wins
    return list(documents.values())


def _string(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _time(value: Any) -> str | None:
    """ChatGPT's times are seconds since the epoch (floats): as ISO 8601 in UTC."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.datetime.fromtimestamp(value, datetime.UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def current_branch(mapping: dict[str, Any], current_node: Any) -> list[dict[str, Any]]:
    """The nodes from the root down to `current_node`. Without a usable `current_node`,
    the branch ends at the last leaf listed. A cycle of parents ends the walk."""
    if not isinstance(current_node, str) or current_node not in mapping:
        leaves = [key for key, node in mapping.items() if isinstance(node, dict) and not node.get("children")]
        if not leaves:
            return []
        current_node = leaves[-1]
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = current_node
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        branch.append(node)
        node_id = node.get("parent")
    branch.reverse()
    return branch


def message_text(message: Any) -> tuple[str, str]:
    """(role, text) of a message worth indexing, else ("", "")."""
    if not isinstance(message, dict):
        return "", ""
    author = message.get("author")
    role = _string(author.get("role")) if isinstance(author, dict) else ""
    metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    if role not in ROLES or metadata.get("is_visually_hidden_from_conversation") is True:
        return "", ""
    if message.get("recipient", "all") != "all":  # the assistant addressing a tool (code to run, a search)
        return "", ""
    if message.get("channel") not in (None, "final"):  # a reasoning model's "analysis" before its answer
        return "", ""
    content = message.get("content")
    if not isinstance(content, dict) or content.get("content_type") not in TEXT_CONTENT_TYPES:
        return "", ""
    parts = content.get("parts")
    texts = [p.strip() for p in parts if isinstance(p, str) and p.strip()] if isinstance(parts, list) else []
    return role, "\n\n".join(texts)


def parse_conversation(path: str, conversation: dict[str, Any]) -> ParsedDocument:
    conversation_id = _string(conversation.get("conversation_id")) or _string(conversation.get("id"))
    if not conversation_id:
        raise ValueError("a conversation has no id")
    if len(conversation_id) > MAX_ID_CHARS:
        raise ValueError(f"a conversation's id is longer than {MAX_ID_CHARS} characters")
    title = _string(conversation.get("title")) or "Untitled conversation"
    branch = current_branch(conversation["mapping"], conversation.get("current_node"))
    said: list[units.Message] = []
    times: list[str | None] = []
    for node in branch:
        role, text = message_text(node.get("message"))
        if text:
            times.append(_time(node["message"].get("create_time")))
            when = moment(times[-1]) or moment(_time(conversation.get("create_time")))
            said.append(units.Message(SPEAKERS[role], text, when, role == "user"))
    sections = units.sections(title, said)
    canonical = json.dumps(conversation, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return ParsedDocument(
        path=f"{path}#{conversation_id}",
        kind=kinds.CHATGPT_CONVERSATION,
        title=title,
        content_hash=hashlib.sha256(canonical).hexdigest(),
        sections=sections,
        # Its last message's time shown; without message times, the conversation's own.
        occurred_at=latest(times) or moment(_time(conversation.get("update_time"))),
        metadata={
            "conversation_id": conversation_id,
            "created_at": _time(conversation.get("create_time")),
            "updated_at": _time(conversation.get("update_time")),
            "messages": len(said),
            "model": _string(conversation.get("default_model_slug")) or None,
        },
    )
