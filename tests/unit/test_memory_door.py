"""remember's door decides: near-duplicates by similarity and shared rare terms, secrets by the redaction's detector."""

import pytest

from pgrecall.memory.client import NearDuplicate, SecretInMemory
from pgrecall.worker.memory import door as memory_door
from pgrecall.worker.memory.door import Candidate, find_secret, is_near_duplicate, near_duplicates, rare_terms
from tests.support.secrets import SHAPES


def test_rare_terms_leave_out_stop_words_and_read_numbers_and_plurals_alike():
    assert rare_terms("Staging now runs three replicas.") == {"staging", "run", "3", "replica"}
    assert rare_terms("staging runs 3 replica") == rare_terms("Staging now runs three replicas.")
    assert rare_terms("the access of it") == {"access"}
    assert rare_terms("It is what it is.") == set()


@pytest.mark.parametrize(
    ("similarity", "other", "expected"),
    [
        (0.93, "Staging now runs 3 replicas.", True),
        (0.74, "Staging now runs 3 replicas.", False),  # below the threshold
        (0.99, "What it is, is.", False),  # alike in shape only: no rare term shared
    ],
)
def test_a_near_duplicate_needs_the_similarity_and_a_shared_rare_term(similarity, other, expected):
    candidate = Candidate("0123456789ab", other, similarity)
    assert is_near_duplicate("Staging runs three replicas.", candidate, 0.75) is expected


def test_near_duplicates_are_the_passing_candidates_most_similar_first():
    candidates = [
        Candidate("aaaaaaaaaaaa", "Staging runs 3 replicas.", 0.80),
        Candidate("bbbbbbbbbbbb", "Lentil soup needs cumin.", 0.90),
        Candidate("cccccccccccc", "Staging has three replicas now.", 0.95),
        Candidate("dddddddddddd", "Staging runs two replicas.", 0.60),
    ]
    found = near_duplicates("Staging runs three replicas.", candidates, 0.75)
    assert [c.id for c in found] == ["cccccccccccc", "aaaaaaaaaaaa"]


def test_the_refusal_names_each_memory_once_and_the_two_ways_on_in_the_interfaces_words():
    refusal = memory_door.near_duplicate(
        [Candidate("cccccccccccc", "Staging has\nthree replicas.", 0.95), Candidate("aaaaaaaaaaaa", "x", 0.8)]
    )
    assert isinstance(refusal, NearDuplicate) and refusal.ids == ["cccccccccccc", "aaaaaaaaaaaa"]
    message = str(refusal)
    assert "\n" not in message and "Staging has three replicas." in message
    assert message.count("cccccccccccc") == 2 and message.count("aaaaaaaaaaaa") == 1  # listed once, then the advice
    assert "update_memory('cccccccccccc', text=...)" in message and "force=True" in message
    assert refusal.to_json()["near_duplicates"][0] == {
        "id": "cccccccccccc",
        "text": "Staging has\nthree replicas.",
        "similarity": 0.95,
    }
    cli = refusal.to_json("cli")["error"]
    assert "pgrecall update cccccccccccc" in cli and cli.endswith("--force")
    assert "update_memory" not in cli and "force=" not in cli
    assert "update_memory(id='cccccccccccc'" in refusal.describe(refusal.similar, "mcp")
    http = refusal.describe(refusal.similar, "http")
    assert "PATCH /memories/cccccccccccc" in http and '"force": true' in http


ISSUE_PAIRS = [
    (
        "Meter error E-4711 means the gateway stopped reporting readings; fix by restarting the gateway.",
        "Meter error E-4712 means the meter's clock lost sync with the gateway; fix with chronyc.",
    ),
    ("Staging runs three replicas since the March outage.", "Production runs five replicas since the March outage."),
    ("Lot QZ3-B003 passed the humidity test.", "Lot QZ3-B006 passed the humidity test."),
    ("Alice owns the billing service.", "Bob owns the billing service."),
    ("The parser in lexer.py handles tabs.", "The parser in lexer.py does not handle tabs."),
]
PARAPHRASES = [
    (
        "Staging runs three replicas since the March outage.",
        "Since the March outage, staging has been running 3 replicas.",
    ),
    ("The nightly backup job starts at 2 am UTC.", "Backups run every night at 02:00 UTC."),
    ("Backups are kept for thirty-five days in Loki.", "Loki keeps backups for 35 days."),
    ("Tests use a real PostgreSQL, never a mock.", "Our tests run against an actual Postgres instead of mocks."),
    ("Budget approvals above 5000 euros go to the CFO.", "Any spend over 5,000 EUR has to be approved by the CFO."),
    ("The load balancer health check hits /healthz every 10 seconds.", "Every ten seconds the LB probes /healthz."),
    ("Interns start on the first of July.", "The interns begin on July 1st."),
]


@pytest.mark.parametrize(("text", "other"), ISSUE_PAIRS)
def test_a_text_bringing_its_own_number_code_name_or_negation_is_another_fact(text, other):
    assert memory_door.new_details(other, text)
    close = Candidate("0123456789ab", text, 0.93)
    assert not is_near_duplicate(other, close, 0.75)
    assert memory_door.similar_facts(other, [close], 0.75) == [close]  # saved, naming what it resembles


@pytest.mark.parametrize(("text", "other"), PARAPHRASES)
def test_a_paraphrase_keeping_the_numbers_codes_and_names_is_still_a_near_duplicate(text, other):
    assert memory_door.new_details(other, text) == []
    assert is_near_duplicate(other, Candidate("0123456789ab", text, 0.93), 0.75)


@pytest.mark.parametrize(("kind", "build"), SHAPES)
def test_a_secret_is_named_by_kind_and_place_never_by_its_value(kind, build):
    secret = build(7)
    text = f"Deploy notes.\nThe key is {secret} for now."
    found = find_secret({"text": text, "title": None})
    assert (found.field, found.kind, found.line, found.column) == ("text", kind, 2, len("The key is ") + 1)
    refusal = found.refusal()
    assert isinstance(refusal, SecretInMemory) and refusal.kind == kind
    assert refusal.where == f"text, line 2, column {len('The key is ') + 1}"
    message = str(refusal)
    assert kind in message and "line 2" in message and "allow_secret=true" in message and "\n" not in message
    for piece in (secret, secret[:12], secret[-12:]):
        assert piece not in message


def test_a_secret_in_the_title_is_found_too_and_plain_text_passes():
    assert find_secret({"text": "Deploys go out on Tuesdays.", "title": "Deploy day"}) is None
    found = find_secret({"text": "Deploys go out on Tuesdays.", "title": "password=hunter2-blue"})
    assert (found.field, found.kind, found.line, found.column) == ("title", "password", 1, 10)


def test_german_function_words_are_no_rare_terms_and_numbers_read_alike():
    assert rare_terms("Die Staging-Umgebung läuft jetzt auf drei Servern.") == {
        "staging",
        "umgebung",
        "läuft",
        "3",
        "servern",
    }
    assert rare_terms("Staging läuft auf 3 Servern") <= rare_terms("Die Staging-Umgebung läuft jetzt auf drei Servern.")
    # Two German texts alike in shape only share "die", "ist", "auf": no rare term, no near-duplicate.
    unrelated = Candidate("0123456789ab", "Die Katze ist auf dem Sofa.", 0.9)
    assert not is_near_duplicate("Die Datenbank ist auf dem Server.", unrelated, 0.75)
