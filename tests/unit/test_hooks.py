"""The hooks' pure core: Claude Code's payloads parsed, passages filtered by the threshold, output within budget."""

from __future__ import annotations

import datetime
import threading
from pathlib import Path

import pytest

from pgrecall.claude_integration import hooks
from pgrecall.cli import hook_commands as hook
from pgrecall.errors import InvalidInput
from pgrecall.settings import load_settings

FIXTURES = Path(__file__).parents[1] / "fixtures" / "hooks"


def passage(document_id: int, similarity: float, **fields) -> hooks.Passage:
    values = {
        "path": f"/notes/{document_id}.md",
        "title": f"Note {document_id}",
        "snippet": "We chose PostgreSQL advisory locks over Redis for the ingest queue.",
        "memory_id": None,
    }
    values.update(fields)
    return hooks.Passage(document_id=document_id, similarity=similarity, **values)


def test_a_user_prompt_submit_payload_as_claude_code_sends_it():
    payload = hooks.parse_payload((FIXTURES / "user_prompt_submit.json").read_text(), hooks.PROMPT)
    assert payload.prompt == "why is there no Redis for the ingest queue?"
    assert payload.cwd == "/home/ada/src/ingest"
    assert payload.session_id == "4f1c9e2a-7b3d-4c8e-9a61-2d5e8f0b3c47"
    assert payload.transcript_path.endswith("4f1c9e2a-7b3d-4c8e-9a61-2d5e8f0b3c47.jsonl")


@pytest.mark.parametrize(
    ("name", "source"), [("session_start.json", "startup"), ("session_start_compact.json", "compact")]
)
def test_session_start_payloads_as_claude_code_sends_them(name, source):
    payload = hooks.parse_payload((FIXTURES / name).read_text(), hooks.SESSION_START)
    assert (payload.source, payload.cwd, payload.prompt) == (source, "/home/ada/src/ingest", None)


@pytest.mark.parametrize(
    ("text", "event", "message"),
    [
        ("", hooks.PROMPT, "no hook JSON on stdin"),
        ("  \n", hooks.SESSION_START, "no hook JSON on stdin"),
        (
            "{not json",
            hooks.PROMPT,
            "the hook JSON on stdin is not JSON: Expecting property name enclosed in double quotes at line 1",
        ),
        ("[1, 2]", hooks.PROMPT, "the hook JSON on stdin is not an object"),
        ('{"hook_event_name": "UserPromptSubmit"}', hooks.PROMPT, "the UserPromptSubmit JSON has no prompt"),
        ('{"prompt": 3}', hooks.PROMPT, "the hook's prompt must be a string"),
        (
            '{"hook_event_name": "Stop", "prompt": "x"}',
            hooks.PROMPT,
            "this hook is for UserPromptSubmit events, got Stop",
        ),
    ],
)
def test_a_payload_that_is_not_the_hooks_is_one_line(text, event, message):
    with pytest.raises(InvalidInput) as raised:
        hooks.parse_payload(text, event)
    assert str(raised.value) == message


def test_unknown_fields_are_ignored_and_the_event_name_may_be_absent():
    payload = hooks.parse_payload('{"prompt": "deploy days", "future_field": {"a": 1}}', hooks.PROMPT)
    assert payload.prompt == "deploy days" and payload.event == hooks.PROMPT


@pytest.mark.parametrize(
    ("prompt", "searched"),
    [
        ("yes", False),
        ("thanks!", False),
        ("  go on ", False),
        ("/compact keep the plan", False),
        ("/review", False),
        ("deploy days", True),
        ("why is there no Redis?", True),
    ],
)
def test_very_short_prompts_and_slash_commands_are_not_searched(prompt, searched):
    assert hooks.worth_searching(prompt) is searched


def test_only_passages_at_or_above_the_threshold_are_kept_in_order():
    found = [passage(1, 0.62), passage(2, 0.31), passage(1, 0.70), passage(3, 0.45), passage(4, 0.44)]
    kept = hooks.relevant(found, 0.45)
    assert [(p.document_id, p.similarity) for p in kept] == [(1, 0.62), (1, 0.70), (3, 0.45)]
    assert hooks.relevant(found, 0.8) == []


def test_the_passages_of_one_document_are_one_item_under_one_line():
    found = [
        passage(1, 0.7, snippet="Advisory locks, not Redis."),
        passage(2, 0.6),
        passage(1, 0.5, snippet="The jobs commit with the rows."),
    ]
    text = hooks.prompt_context(found, 800)
    assert text.count("(id 1)") == 1 and text.count("(id 2)") == 1
    assert "  Advisory locks, not Redis. … The jobs commit with the rows.\n" in text
    assert text.index("(id 1)") < text.index("(id 2)")


def test_nothing_relevant_prints_nothing():
    assert hooks.prompt_context([], 800) == ""
    assert hooks.briefing([], 600, "/src") == ""


WHEN = datetime.datetime(2026, 11, 20, 9, 12, tzinfo=datetime.UTC)


def test_a_memory_is_one_line_of_title_memory_id_day_and_id_without_its_path():
    memory = passage(7, 0.7, memory_id="3f9c0a1b2c4d", title="Queue locking", when=WHEN, path="/m/2026/11/x.md")
    text = hooks.prompt_context([memory], 800)
    lines = text.splitlines()
    assert lines[0] == hooks.PROMPT_HEADER and "get_document(id)" in lines[0]
    assert lines[1] == "- Queue locking: memory 3f9c0a1b2c4d, 2026-11-20 (id 7)"
    assert lines[2] == "  We chose PostgreSQL advisory locks over Redis for the ingest queue."
    assert len(lines) == 3 and text.endswith("\n") and "/m/2026" not in text


def test_a_title_that_repeats_the_text_is_left_out():
    memory = passage(7, 0.7, memory_id="3f9c0a1b2c4d", title="We chose PostgreSQL advisory locks over Redis…")
    assert hooks.passage_entry(memory).splitlines()[0] == "- memory 3f9c0a1b2c4d (id 7)"


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"path": "/notes/deploy-days.md", "title": None}, "- /notes/deploy-days.md, 2026-11-20 (id 9)"),
        ({"path": "/home/ada/src/ingest/docs/queue.md"}, "- Note 9: docs/queue.md, 2026-11-20 (id 9)"),
        ({"path": "/cc/a.jsonl", "kind": "claude_code_session"}, "- Note 9: session, 2026-11-20 (id 9)"),
        ({"path": "/x/c.json#3", "kind": "chatgpt_conversation"}, "- Note 9: conversation, 2026-11-20 (id 9)"),
    ],
)
def test_a_path_is_shown_only_for_a_file_to_open_relative_to_the_cwd_when_inside_it(fields, line):
    entry = hooks.passage_entry(passage(9, 0.7, when=WHEN, **fields), cwd="/home/ada/src/ingest")
    assert entry.splitlines()[0] == line


def test_a_path_stays_absolute_for_a_session_started_at_the_root():
    assert hooks.shown_path("/notes/a.md", "/") == "/notes/a.md"
    assert hooks.shown_path("/notes/a.md", None) == "/notes/a.md"
    assert hooks.shown_path("/notes/a.md", "/notes/") == "a.md"


def link_note(document_id: int, text: str, **fields) -> hooks.Passage:
    return passage(
        document_id, 0.6, title=None, path=f"/notes/daily/{document_id}.md", text=text, snippet=text, **fields
    )


@pytest.mark.parametrize(
    ("text", "only"),
    [
        ("# 2026-11-04\n\n- [[Incident E-4711]]", True),
        ("- Standup: [[Incident E-4711]] follow-up still open.", True),
        ("See [the incident](incidents/e-4711.md).", True),
        ("[[Incident E-4711]] was the expired certificate: we now renew them a month ahead, by a timer.", False),
        ("No link at all.", False),
    ],
)
def test_a_passage_of_links_only(text, only):
    assert hooks.only_links(text) is only


def test_link_targets_are_titles_and_file_names():
    assert hooks.link_targets("[[Incident E-4711#Timeline|the incident]] and [x](../ops/runbook.md)") == [
        "incident e-4711",
        "runbook",
    ]


def test_a_note_that_only_links_to_a_shown_note_is_not_shown_in_its_place():
    incident = passage(5, 0.4, title="Incident E-4711", exact=True, path="/notes/incident-e4711.md")
    found = [
        link_note(1, "- Standup: [[Incident E-4711]] follow-up still open."),
        link_note(2, "- [[incident-e4711]]"),
        incident,
    ]
    text = hooks.prompt_context(found, 800)
    assert "(id 5)" in text and "(id 1)" not in text and "(id 2)" not in text


def test_notes_that_only_link_to_a_note_not_found_are_shown_once():
    found = [link_note(1, "- [[Incident E-4711]]"), link_note(2, "- Review of [[Incident E-4711]]."), passage(3, 0.6)]
    items = hooks.items_of(found)
    assert [item.first.document_id for item in items] == [1, 3]


@pytest.mark.parametrize(
    ("prompt", "switch"),
    [
        ("/pgrecall-off", False),
        ("/PGRECALL:OFF", False),
        ("pgrecall injections: off\n\npgrecall's hooks now add nothing", False),
        ("/pgrecall-on", True),
        ("pgrecall injections: on\n\nback on", True),
        ("turn pgrecall off", None),
        ("/pgrecall-offline", None),
    ],
)
def test_the_prompts_that_turn_injection_off_and_on(prompt, switch):
    assert hooks.switch_of(prompt) is switch


def test_the_slash_command_files_start_with_the_line_the_hook_recognises():
    folder = Path(hooks.__file__).parent / "claude_commands"
    for name, switch in (("pgrecall-off.md", False), ("pgrecall-on.md", True)):
        body = (folder / name).read_text().split("---\n", 2)[2]
        assert hooks.switch_of(body) is switch
        assert f"/{name.removesuffix('.md')}" in hooks.SWITCH_OFF + hooks.SWITCH_ON


def test_the_snippet_is_one_line_and_capped():
    entry = hooks.passage_entry(passage(1, 0.9, snippet="word\n" * 200))
    snippet = entry.splitlines()[1].strip()
    assert len(snippet) == hooks.SNIPPET_CHARS and snippet.endswith("…")


def test_tokens_are_estimated_at_four_characters_each():
    assert [hooks.estimate_tokens(t) for t in ("", "abc", "abcd", "abcde")] == [0, 1, 1, 2]


@pytest.mark.parametrize("budget", [80, 120, 300, 800])
def test_the_output_stays_within_its_budget_and_keeps_whole_entries_best_first(budget):
    found = [passage(n, 0.9 - n / 200) for n in range(1, 80)]
    text = hooks.prompt_context(found, budget)
    assert 0 < hooks.estimate_tokens(text) <= budget
    shown = [p for p in found if hooks.passage_entry(p) in text]
    assert shown == found[: len(shown)]  # a prefix: no entry skipped for a shorter one after it
    assert text.count("(id ") == len(shown)
    assert hooks.estimate_tokens(hooks.prompt_context(found, budget * 2)) > hooks.estimate_tokens(text)


def test_a_budget_too_small_for_one_entry_prints_nothing():
    assert hooks.prompt_context([passage(1, 0.9)], 20) == ""


def recent(document_id, kind, day, **fields) -> hooks.Recent:
    values = {"path": f"/mem/{document_id}.md", "title": f"Item {document_id}", "memory_id": None, "text": ""}
    values.update(fields)
    when = datetime.datetime(2026, 11, day, 12, tzinfo=datetime.UTC) if day else None
    return hooks.Recent(document_id=document_id, kind=kind, when=when, **values)


def test_the_briefing_lists_memories_then_sessions_newest_first():
    items = [
        recent(1, "session", 3, title="Fix the flaky upload test", path="/cc/a.jsonl"),
        recent(2, "memory", 1, memory_id="aaaaaaaaaaaa", text="Deploys go out on Tuesdays."),
        recent(3, "memory", 5, memory_id="bbbbbbbbbbbb", text="Staging runs three replicas."),
        recent(4, "session", 6, title="Queue design", path="/cc/b.jsonl"),
        recent(5, "memory", None, memory_id="cccccccccccc", text="Undated."),
    ]
    lines = hooks.briefing(items, 600, "/home/ada/src/ingest").splitlines()
    assert lines[0] == (
        "pgrecall: recent memories and sessions for /home/ada/src/ingest, newest first "
        "(get_document(id) returns one in full):"
    )
    assert lines[1] == "- 2026-11-05 Item 3: memory bbbbbbbbbbbb (id 3)"
    assert lines[2] == "  Staging runs three replicas."
    assert [line.split()[1] for line in lines[1:] if line.startswith("- ")] == [
        "2026-11-05",
        "2026-11-01",
        "undated",
        "2026-11-06",
        "2026-11-03",
    ]
    assert lines[-2] == "- 2026-11-06 session: Queue design (id 4)"
    assert "/cc/" not in "\n".join(lines) and "/mem/" not in "\n".join(lines)


def test_a_memory_whose_title_is_its_text_is_one_line_in_the_briefing():
    item = recent(
        2,
        "memory",
        1,
        memory_id="aaaaaaaaaaaa",
        title="Deploys go out on Tuesdays.",
        text="Deploys go out on Tuesdays.",
    )
    assert hooks.recent_entry(item) == "- 2026-11-01 memory aaaaaaaaaaaa (id 2): Deploys go out on Tuesdays."


def test_the_briefing_stays_within_its_budget():
    items = [recent(n, "memory", 1 + n % 28, memory_id=f"{n:012x}", text="A decision. " * 30) for n in range(40)]
    text = hooks.briefing(items, 200, None)
    assert 0 < hooks.estimate_tokens(text) <= 200
    assert text.splitlines()[0].startswith("pgrecall: recent memories and sessions, newest first")


def test_the_hook_settings_and_their_defaults():
    settings = load_settings({})
    assert (settings.hook_prompt_tokens, settings.hook_session_tokens, settings.hook_deadline) == (800, 600, 1.5)
    assert settings.hook_inject is True and load_settings({"PGRECALL_HOOK_INJECT": "off"}).hook_inject is False
    assert -1 <= settings.hook_min_score <= 1
    assert load_settings({"PGRECALL_HOOK_MIN_SCORE": "0.25", "PGRECALL_HOOK_DEADLINE": "3"}).hook_deadline == 3.0


def test_the_process_age_is_read_and_grows():
    first = hook.seconds_since_start()
    assert first > 0  # this test process started a while ago
    assert hook.seconds_since_start() >= first


def test_an_error_in_the_work_is_one_line_on_stderr_and_exit_0(capsys):
    def work() -> str:
        raise InvalidInput("no hook JSON on stdin")

    assert hook.within_deadline("prompt", work, deadline=10_000) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == "pgrecall hook prompt: nothing added: no hook JSON on stdin\n"


def test_the_work_in_time_is_printed_as_it_is(capsys):
    assert hook.within_deadline("prompt", lambda: "context\n", deadline=10_000) == 0
    assert capsys.readouterr() == ("context\n", "")


def test_the_work_runs_in_a_daemon_thread(capsys):
    seen = []
    hook.within_deadline("prompt", lambda: seen.append(threading.current_thread().daemon) or "", deadline=10_000)
    assert seen == [True]


def test_a_passage_holding_an_identifier_the_prompt_names_is_kept_below_the_threshold():
    found = [passage(1, 0.21, exact=True), passage(2, 0.22), passage(3, 0.6)]
    assert [p.document_id for p in hooks.relevant(found, 0.5)] == [1, 3]


@pytest.mark.parametrize(
    ("text", "identifiers", "named"),
    [
        ("Incident E-4711: the checkout timed out.", ["e-4711"], True),
        ("Incident E-4712: the checkout timed out.", ["e-4711"], False),
        ("Set it in Config.TOML", ["config.toml"], True),
        ("anything", [], False),
    ],
)
def test_names_identifier(text, identifiers, named):
    assert hooks.names_identifier(text, identifiers) is named
