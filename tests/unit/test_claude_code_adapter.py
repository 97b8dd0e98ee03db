"""Claude Code transcripts. The fixtures under tests/fixtures/claude_code are written for
these tests in the record shapes of Claude Code 2.0.46 and 2.1.173 transcripts as public
parsers ship them as test data (daaain/claude-code-log's test/test_data, and the record
types skipped by other transcript readers: queue-operation, progress, attachment,
ai-title, last-prompt, permission-mode, compact boundaries)."""

import json
from pathlib import Path

import pytest

from pgrecall import kinds
from pgrecall.errors import UnsupportedFile
from pgrecall.worker import adapters
from pgrecall.worker.adapters import claude_code

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude_code"
SESSION_ID = "7b3e2c1a-5d4f-4e8a-9c6b-2f1e0d9c8b7a"
SESSION = FIXTURES / f"{SESSION_ID}.jsonl"
SUBAGENT = FIXTURES / SESSION_ID / "subagents" / "agent-a3f9c21.jsonl"
LEGACY = FIXTURES / "5e8f1a2b-0c3d-4e5f-8a9b-1c2d3e4f5a6b.jsonl"


def _parse(path: Path, **options):
    return claude_code.parse_session(f"projects/-home-ada-src-shop/{path.name}", path.read_text(), **options)


def _line(**record) -> str:
    return json.dumps(record)


def test_a_session_is_one_document_with_a_section_per_exchange():
    doc = _parse(SESSION)
    assert doc.kind == kinds.CLAUDE_CODE_SESSION
    assert doc.path == f"projects/-home-ada-src-shop/{SESSION_ID}.jsonl"
    assert {s.heading for s in doc.sections} == {"Autovacuum disabled on orders"}
    first, second = doc.sections  # each prompt with its answer, dated and named
    assert first.text.startswith(
        "[15 June 2026] User: /model opus\n\nWhy does autovacuum never run on the orders table?"
    )
    assert "\n\nClaude: Let me look at the table's storage parameters." in first.text
    assert first.text.endswith(
        "orders carries 1.2 million dead tuples. After the migration, run VACUUM (VERBOSE) orders once."
    )
    # The answer before a prompt is its context (whole: it is under CONTEXT_WORDS words).
    assert second.text.startswith("[15 June 2026] Claude: Let me look at the table's storage parameters.")
    assert second.context == second.text.index("\n\nUser: Thanks.") + 2
    assert "\n\nUser: Thanks. Does the fillfactor matter here?\n\nClaude: A fillfactor of 90" in second.text


def test_tool_calls_are_one_line_each_and_their_results_and_thinking_are_left_out():
    text = "\n".join(s.text for s in _parse(SESSION).sections)
    assert "[tool: Bash] psql -c '\\d+ orders'" in text.splitlines()  # the first line of the command only
    assert "[tool: Edit] /home/ada/src/shop/db/migrations/0042_orders_autovacuum.sql" in text.splitlines()
    assert "[tool: Task] Count dead tuples" in text.splitlines()
    assert "[tool: web_search] postgres fillfactor HOT updates" in text.splitlines()
    assert "echo done" not in text
    assert "Options: autovacuum_enabled=false" not in text  # a tool result
    assert "check the table's settings first" not in text  # thinking
    assert "ALTER TABLE orders RESET" not in text  # an Edit's new text is the file's, not the conversation's


def test_tool_results_are_included_when_asked_for():
    text = "\n".join(s.text for s in _parse(SESSION, include_tool_results=True).sections)
    assert "[result] Options: autovacuum_enabled=false, fillfactor=90" in text
    assert "[result] orders has 1.2 million dead tuples" in text
    assert "check the table's settings first" not in text


def test_harness_records_are_not_turns():
    text = "\n".join(s.text for s in _parse(SESSION).sections)
    for harness in (
        "Set model to opus",  # <local-command-stdout>
        "Caveat",  # isMeta
        "system-reminder",
        "opened the file db/tuning.sql",
        "This session is being continued",  # isCompactSummary
        "Request interrupted",
        "also check the dead tuples",  # an attachment (queued command)
        "Conversation compacted",  # system
        "half-written",  # the truncated last line
        "iVBORw0KGgo",  # an image block
    ):
        assert harness not in text, harness


def test_session_metadata():
    doc = _parse(SESSION)
    assert doc.title == "Autovacuum disabled on orders"
    assert doc.metadata == {
        "session_id": SESSION_ID,
        "project": "/home/ada/src/shop",
        "git_branch": "fix/vacuum",
        "first_timestamp": "2026-06-15T10:00:00.500Z",
        "last_timestamp": "2026-06-15T10:50:00.000Z",
        "claude_code_version": "2.1.173",
        "title_source": "ai-title",
        "prompts": 3,
    }


def test_a_subagent_transcript_names_its_parent_session():
    doc = _parse(SUBAGENT)
    assert doc.metadata["parent_session_id"] == SESSION_ID
    assert doc.metadata["agent_id"] == "a3f9c21"
    [exchange] = doc.sections
    assert exchange.text.startswith(
        "[15 June 2026] User: Count dead tuples per table in the shop database.\n\nClaude: "
    )
    assert doc.title == "Count dead tuples per table in the shop database."
    assert "parent_session_id" not in _parse(SESSION).metadata


def test_an_older_transcript_with_the_subagent_inline_and_summaries():
    doc = _parse(LEGACY)
    # Of two summary lines, the one whose leaf is a message of this file names it.
    assert (doc.title, doc.metadata["title_source"]) == ("Raised beds: soil depth for carrots", "summary")
    [exchange] = doc.sections
    assert exchange.text == (
        "[19 November 2025] User: How deep must a raised bed be for carrots?\n\n"
        "Claude: I'll ask a subagent to check the seed packet notes.\n\n[tool: Task] Read the seed notes\n\n"
        "Claude to subagent: Find carrot depth in notes/\n\n"
        "Subagent: [tool: Grep] carrot\n\nnotes/seeds.md says 30 cm.\n\n"
        "Claude: Carrots need at least 30 cm of loose, stone-free soil."
    )
    assert doc.metadata["project"] == "e:\\Workspace\\src\\garden-planner"
    assert doc.metadata["git_branch"] is None
    assert "parent_session_id" not in doc.metadata


def test_title_falls_back_to_a_summary_then_the_first_prompt():
    first = _line(type="user", sessionId="s", message={"role": "user", "content": "Plan the\nrelease of 2.4"})
    assert claude_code.parse_session("s.jsonl", first).title == "Plan the"
    summary = _line(type="summary", summary="Release planning", leafUuid="elsewhere")
    assert claude_code.parse_session("s.jsonl", f"{first}\n{summary}").title == "Release planning"
    named = _line(type="custom-title", customTitle="release-2.4", sessionId="s")
    assert claude_code.parse_session("s.jsonl", f"{first}\n{summary}\n{named}").title == "release-2.4"
    long = _line(type="user", sessionId="s", message={"content": "x" * 500})
    assert len(claude_code.parse_session("s.jsonl", long).title) == claude_code.MAX_TITLE_CHARS


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        "{truncated",
        "[1, 2]",
        '"a string"',
        _line(type="user", sessionId="s", message="not an object"),
        _line(type="user", sessionId="s", message={"content": [1, None, {"type": "text", "text": 5}]}),
        _line(type="assistant", sessionId="s", message={"content": [{"type": "tool_use", "input": "x"}]}),
        _line(type="assistant", sessionId="s", message={"content": None}),
        _line(type="brand-new-record", sessionId="s", payload={"deep": [[[]]]}),
        _line(type="user", sessionId="s", timestamp=12, cwd=["x"], message={"content": "ok"}),
    ],
)
def test_broken_and_unknown_lines_are_skipped_never_an_error(line):
    good = _line(type="user", sessionId="s", message={"role": "user", "content": "the prompt"})
    doc = claude_code.parse_session("s.jsonl", f"{good}\n{line}\n")
    assert doc.sections[0].text.startswith("User: the prompt")


def test_a_tool_call_without_a_name_or_input_still_makes_a_line():
    assert claude_code.tool_line({"type": "tool_use"}) == "[tool: unknown]"
    assert claude_code.tool_line({"name": "TodoWrite", "input": {"todos": []}}) == "[tool: TodoWrite]"
    assert claude_code.tool_line({"name": "Grep", "input": {"pattern": "x" * 300}}).endswith("…")


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([SESSION.read_text().splitlines()[0], SESSION.read_text().splitlines()[1]], True),
        (SUBAGENT.read_text().splitlines()[:1], True),
        (LEGACY.read_text().splitlines()[:3], True),
        (['{"type": "summary", "summary": "x", "leafUuid": "u"}'], False),  # proves nothing yet
        (['{"timestamp": "2026-01-02T03:04:05Z", "type": "session_meta", "payload": {"id": "x"}}'], False),  # Codex
        (['{"event": "login", "user": 1}', '{"event": "logout", "user": 1}'], False),
        (['{"type": "user", "message": "no session id"}'], False),
        (["not json", ""], False),
        ([], False),
    ],
)
def test_looks_like_session(lines, expected):
    assert claude_code.looks_like_session(lines) is expected


def test_jsonl_files_are_sessions_by_content_and_others_are_skipped_with_a_reason():
    assert adapters.kind_of("p/x.JSONL") == kinds.CLAUDE_CODE_SESSION
    parsed = adapters.parse(f"p/{SESSION.name}", SESSION.read_bytes())
    assert (parsed.kind, parsed.container) == (kinds.CLAUDE_CODE_SESSION, False)
    assert [d.path for d in parsed.documents] == [f"p/{SESSION.name}"]
    assert parsed.documents[0].content_hash == adapters.content_hash(SESSION.read_bytes())
    with pytest.raises(UnsupportedFile, match="^JSON Lines file that is not a Claude Code session$"):
        adapters.parse("data/events.jsonl", b'{"event": "login"}\n{"event": "logout"}\n')
    with pytest.raises(UnsupportedFile, match="not a Claude Code session"):
        adapters.parse("data/empty.jsonl", b"")


def test_tool_results_option_reaches_the_adapter_through_parse():
    data = SESSION.read_bytes()
    without = "\n".join(s.text for s in adapters.parse("x.jsonl", data).documents[0].sections)
    with_results = "\n".join(
        s.text for s in adapters.parse("x.jsonl", data, include_tool_results=True).documents[0].sections
    )
    assert "[result]" not in without and "[result]" in with_results
