"""Small note folders written by the tests themselves."""

from __future__ import annotations

import json
from pathlib import Path

ERROR_CODE_NOTES = {
    "incidents/e4711.md": "# Incident report\n\nThe export job failed with error code E-4711 after storage throttled reads.",
    "incidents/e4712.md": "# Incident report\n\nThe export job failed with error code E-4712 after storage throttled reads.",
    "notes/garden.md": "# Garden\n\nTomatoes ripen faster on the south bed.",
    "notes/postgres.txt": "Autovacuum settings: lower the scale factor on large tables.",
}

# Front matter with a tag as a list, as a scalar, and another tag: `tags=incident` matches the first two.
TAGGED_NOTES = {
    "failover.md": "---\ntags: [incident, database]\nstatus: open\n---\n# Failover\n\nThe replica was promoted.",
    "disk.md": "---\ntags: incident\nstatus: closed\n---\n# Disk\n\nThe disk filled and the replica stopped.",
    "roadmap.md": "---\ntags: [planning]\nstatus: open\n---\n# Roadmap\n\nA second replica next quarter.",
}


def write_notes(root: Path, notes: dict[str, str | bytes]) -> Path:
    for relative, content in notes.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def conversation(uuid: str, name: str, turns: list[tuple[str, str]], attachment: str | None = None) -> dict:
    messages = []
    for number, (sender, text) in enumerate(turns):
        messages.append(
            {
                "uuid": f"{uuid}-m{number}",
                "sender": sender,
                "text": text,
                "content": [{"type": "text", "text": text}],
                "created_at": f"2025-03-01T10:{number:02d}:00Z",
                "attachments": [],
            }
        )
    if attachment:
        messages[0]["attachments"].append(
            {"file_name": "notes.txt", "file_type": "text/plain", "extracted_content": attachment}
        )
    return {
        "uuid": uuid,
        "name": name,
        "created_at": "2025-03-01T10:00:00Z",
        "updated_at": "2025-03-01T11:00:00Z",
        "chat_messages": messages,
    }


def write_export(path: Path, conversations: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path
