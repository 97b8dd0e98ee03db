"""The rule for "used" and the report, on transcripts written for the tests (Claude Code's record shapes)."""

from __future__ import annotations

import json

import pytest

from pgrecall.claude_integration import injection_use

AT = "2026-11-22T08:00:01.000Z"
INCIDENT = {
    "document_id": 5,
    "memory_id": None,
    "title": "Incident E-4711",
    "path": "/home/ada/notes/incident-e4711.md",
    "terms": injection_use.distinctive_terms(
        "Incident E-4711\nThe nightly ledger export failed after the storage bucket throttled reads; "
        "we added exponential backoff to export_ledger_batch.",
        "what happened in E-4711?",
    ),
}
MEMORY = {"document_id": 9, "memory_id": "3f9c0a1b2c4d", "title": None, "path": "/m/x.md", "terms": ["tuesdays"]}


def assistant(at: str, text: str = "", tool: dict | None = None) -> str:
    content = [{"type": "text", "text": text}] if text else []
    if tool is not None:
        content.append({"type": "tool_use", "id": "toolu_1", "name": tool["name"], "input": tool["input"]})
    return json.dumps({"type": "assistant", "timestamp": at, "message": {"role": "assistant", "content": content}})


def user(at: str, text: str) -> str:
    return json.dumps({"type": "user", "timestamp": at, "message": {"role": "user", "content": text}})


def test_the_terms_are_identifiers_and_long_words_not_in_the_prompt():
    terms = INCIDENT["terms"]
    assert "export_ledger_batch" in terms and "throttled" in terms and "exponential" in terms
    assert "e-4711" not in terms and "incident" in terms  # the prompt named E-4711, not "incident"
    assert "the" not in terms and "ledger" not in terms  # short words say nothing


@pytest.mark.parametrize(
    ("line", "use"),
    [
        (
            assistant(
                "2026-11-22T08:00:05Z", tool={"name": "mcp__pgrecall__get_document", "input": {"id_or_path": "5"}}
            ),
            "tool",
        ),
        (
            assistant(
                "2026-11-22T08:00:05Z",
                tool={"name": "Read", "input": {"file_path": "/home/ada/notes/incident-e4711.md"}},
            ),
            "tool",
        ),
        (
            assistant("2026-11-22T08:00:05Z", tool={"name": "Read", "input": {"file_path": "notes/incident-e4711.md"}}),
            "tool",
        ),
        (assistant("2026-11-22T08:00:05Z", "Per incident-e4711.md the export timed out."), "named"),
        (assistant("2026-11-22T08:00:05Z", "The fix was in export_ledger_batch."), "reused"),
        (assistant("2026-11-22T08:00:05Z", "Reads were throttled, so backoff went exponential."), "reused"),
        (assistant("2026-11-22T08:00:05Z", "E-4711 is an incident number I cannot find."), None),
        (
            assistant(
                "2026-11-22T08:00:05Z", tool={"name": "mcp__pgrecall__get_document", "input": {"id_or_path": "55"}}
            ),
            None,
        ),
        (assistant("2026-11-22T07:59:00Z", "The fix was in export_ledger_batch."), None),  # before the injection
        (user("2026-11-22T08:00:05Z", "The fix was in export_ledger_batch."), None),  # the user said it
    ],
)
def test_an_item_is_used_when_a_later_assistant_message_opens_names_or_reuses_it(line, use):
    record = {"at": AT, "items": [INCIDENT]}
    assert injection_use.used_items(record, [line]) == [use]


def test_a_memory_named_by_its_id_is_used():
    line = assistant(
        "2026-11-22T08:01:00Z",
        tool={"name": "mcp__pgrecall__update_memory", "input": {"memory_id": "3f9c0a1b2c4d", "text": "x"}},
    )
    assert injection_use.used_items({"at": AT, "items": [MEMORY]}, [line]) == ["tool"]


def test_one_long_word_is_not_enough():
    line = assistant("2026-11-22T08:01:00Z", "Deploys go out on tuesdays.")
    assert injection_use.used_items({"at": AT, "items": [MEMORY]}, [line]) == [None]


def test_a_transcript_that_cannot_be_read_leaves_use_unknown():
    assert injection_use.used_items({"at": AT, "items": [INCIDENT]}, None) is None


def test_lines_that_are_not_records_are_skipped():
    lines = [
        "not json",
        "[]",
        json.dumps({"type": "assistant"}),
        assistant("2026-11-22T08:00:05Z", "export_ledger_batch"),
    ]
    assert injection_use.used_items({"at": AT, "items": [INCIDENT]}, lines) == ["reused"]


def run(session, at, outcome="injected", items=(), tokens=0, seconds=0.1, transcript="/t/a.jsonl", cwd="/src/app"):
    return {
        "at": at,
        "event": "prompt",
        "session_id": session,
        "prompt": 1,
        "cwd": cwd,
        "project": cwd,
        "transcript_path": transcript,
        "outcome": outcome,
        "tokens": tokens,
        "seconds": seconds,
        "items": list(items),
    }


def test_the_report_per_session_day_and_project():
    records = [
        run("a", "2026-11-22T08:00:01+00:00", items=[INCIDENT, MEMORY], tokens=120, seconds=0.2),
        run("a", "2026-11-22T08:05:00+00:00", outcome="skipped", seconds=0.05),
        run(
            "b",
            "2026-11-23T09:00:00+00:00",
            items=[MEMORY],
            tokens=40,
            seconds=0.4,
            transcript="/t/gone.jsonl",
            cwd="/src/b",
        ),
        run("b", "2026-11-23T09:01:00+00:00", outcome="off"),
    ]
    transcripts = {
        "/t/a.jsonl": [assistant("2026-11-22T08:00:09Z", "Fixed in export_ledger_batch.")],
        "/t/gone.jsonl": None,
    }
    found = injection_use.report(records, transcripts)
    overall = found["overall"]
    assert (overall["runs"], overall["injections"], overall["items"], overall["tokens"]) == (4, 2, 3, 160)
    assert (overall["used"], overall["unknown"], overall["used_share"], overall["off"]) == (1, 1, 0.5, 1)
    assert overall["tokens_per_injection"] == 80.0 and overall["max_seconds"] == 0.4
    assert [s["session_id"] for s in found["sessions"]] == ["b", "a"]  # latest first
    a = found["sessions"][1]
    assert [(i["document_id"], i["used"]) for i in a["injected"]] == [(5, "reused"), (9, None)]
    assert found["sessions"][0]["injected"] == [
        {"prompt": 1, "event": "prompt", "document_id": 9, "title": None, "used": "unknown"}
    ]
    assert [d["day"] for d in found["days"]] == ["2026-11-23", "2026-11-22"]
    assert [(p["project"], p["tokens"]) for p in found["projects"]] == [("/src/app", 120), ("/src/b", 40)]


def test_an_empty_report():
    found = injection_use.report([], {})
    assert found["overall"]["runs"] == 0 and found["sessions"] == [] and found["overall"]["used_share"] is None
