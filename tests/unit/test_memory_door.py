"""remember's door decides: near-duplicates by similarity and shared rare terms, secrets by the redaction's detector."""

import pytest

from pgrecall.memory_client import NearDuplicate, SecretInMemory
from pgrecall.worker import memory_door
from pgrecall.worker.memory_door import Candidate, find_secret, is_near_duplicate, near_duplicates, rare_terms
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


def test_the_refusal_names_the_memories_and_the_two_ways_on():
    refusal = memory_door.near_duplicate(
        [Candidate("cccccccccccc", "Staging has\nthree replicas.", 0.95), Candidate("aaaaaaaaaaaa", "x", 0.8)]
    )
    assert isinstance(refusal, NearDuplicate) and refusal.ids == ["cccccccccccc", "aaaaaaaaaaaa"]
    message = str(refusal)
    assert "\n" not in message and "cccccccccccc, aaaaaaaaaaaa" in message and "Staging has three replicas." in message
    assert "update_memory(cccccccccccc, ...)" in message and "force=true" in message
    assert refusal.to_json()["near_duplicates"][0] == {
        "id": "cccccccccccc",
        "text": "Staging has\nthree replicas.",
        "similarity": 0.95,
    }
    cli = refusal.describe(refusal.similar, update="pgrecall update {id}", force="--force")
    assert "pgrecall update cccccccccccc" in cli and cli.endswith("--force")


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
    assert rare_terms("Die Staging-Umgebung läuft jetzt auf drei Servern.") == {"staging", "umgebung", "läuft", "3", "servern"}
    assert rare_terms("Staging läuft auf 3 Servern") <= rare_terms("Die Staging-Umgebung läuft jetzt auf drei Servern.")
    # Two German texts alike in shape only share "die", "ist", "auf": no rare term, no near-duplicate.
    unrelated = Candidate("0123456789ab", "Die Katze ist auf dem Sofa.", 0.9)
    assert not is_near_duplicate("Die Datenbank ist auf dem Server.", unrelated, 0.75)
