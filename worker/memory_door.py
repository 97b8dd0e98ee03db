"""What `remember` refuses at the door: a near-duplicate of a memory already kept, and a secret.

Pure functions: the memory service (pgrecall.worker.memory_service) gives them the new
text, and for near-duplicates the nearest memories by vector (sql/queries/door.sql) with
the text their notes hold; these decide.

A near-duplicate is a memory whose vector's cosine similarity with the new text's is at
least PGRECALL_MEMORY_DUPLICATE_SIMILARITY and which shares at least one rare term with
it. The threshold was chosen on hand-written pairs (bench/duplicate_threshold.py): the
model puts "Staging runs three replicas" and "Staging now runs 3 replicas" close, but also
"Staging runs three replicas" and "Production runs three replicas". The shared rare term
keeps a pair of short texts that the model finds alike by their shape alone ("I like tea"
and "We prefer coffee") from counting.

A secret is what the ingest redaction finds (pgrecall.worker.redact.find_secrets); the
refusal names its kind and where it is, never the secret itself.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from pgrecall.memory_client import NearDuplicate, SecretInMemory
from pgrecall.memory_client import SimilarMemory as Candidate
from pgrecall.worker.redact import find_secrets

# Words too common to tell two facts apart: articles, pronouns, auxiliaries, prepositions,
# and the small verbs and adverbs of any sentence.
_STOP_WORDS = """
    a about above after again against all also always am an and any are as at be been before being
    below between both but by can cannot could did do does doing done down during each even ever
    every few for from further get gets got had has have having he her here hers him his how i if in
    into is it its itself just least less let like made make many may me more most much must my
    never new no nor not now of off often on once one only or other our ours out over own per rather
    same says she should since so some still such than that the their them then there these they
    this those through to too under until up upon us use used uses using very was we were what when
    where which while who whom why will with within without would yes yet you your yours
"""
# The same for German, the other language our users write memories in (PGRECALL_LANGUAGES' default):
# without them "die", "und", "auf" would be the shared rare term of any two German texts.
_GERMAN_STOP_WORDS = """
    aber alle allem allen aller alles als also am an andere anderen auch auf aus bei beim bin bis bist
    da damit dann das dass dazu dem den denn der des dich die dies diese diesem diesen dieser dieses dir
    doch dort du durch ein eine einem einen einer eines er es etwas euch euer für gegen gewesen hab habe
    haben hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre im immer in ins ist ja jede jedem
    jeden jeder jedes jetzt kann kein keine können könnte man manche mehr mein meine mich mir mit muss
    nach nicht nichts noch nun nur ob oder ohne schon sehr sein seine sich sie sind so solche soll
    sollte sondern um und uns unser unter viel vom von vor war waren warum was weil welche wenn wer
    werde werden wie wieder will wir wird wo wurde wurden zu zum zur über
"""
STOP_WORDS = frozenset(_STOP_WORDS.split()) | frozenset(_GERMAN_STOP_WORDS.split())
_WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*")
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "hundred": "100",
    "eins": "1", "zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6", "sieben": "7", "acht": "8",
    "neun": "9", "zehn": "10", "elf": "11", "zwölf": "12", "zwanzig": "20", "dreißig": "30", "hundert": "100",
}  # fmt: skip
MAX_CANDIDATES = 5  # nearest memories looked at; more would be listed to the caller as noise


def _term(word: str) -> str:
    word = word.lower().replace("'", "")
    word = _NUMBER_WORDS.get(word, word)
    # A plural and its singular are one term ("replicas", "replica"); "ss" ("access") is no plural.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def rare_terms(text: str) -> frozenset[str]:
    """The words of `text` that can tell one fact from another: no stop word, numbers as digits."""
    return frozenset(
        term
        for term in (_term(word) for word in _WORD.findall(text))
        if term not in STOP_WORDS and (len(term) > 1 or term.isdigit())
    )


def is_near_duplicate(text: str, candidate: Candidate, threshold: float) -> bool:
    return candidate.similarity >= threshold and bool(rare_terms(text) & rare_terms(candidate.text))


def near_duplicates(text: str, candidates: Iterable[Candidate], threshold: float) -> list[Candidate]:
    """The candidates that are near-duplicates of `text`, most similar first."""
    found = [candidate for candidate in candidates if is_near_duplicate(text, candidate, threshold)]
    return sorted(found, key=lambda candidate: (-candidate.similarity, candidate.id))


def near_duplicate(candidates: list[Candidate]) -> NearDuplicate:
    return NearDuplicate(tuple(candidates))


@dataclasses.dataclass(frozen=True)
class SecretFound:
    """Where a secret is in a field of the memory: its kind, line and column (from 1), never its value."""

    field: str
    kind: str
    line: int
    column: int
    offset: int

    def refusal(self) -> SecretInMemory:
        where = f"{self.field}, line {self.line}, column {self.column}"
        message = (
            f"not saved: the memory's {self.field} holds a secret ({self.kind}) at line {self.line}, "
            f"column {self.column}: remove it, or save anyway with allow_secret=true (--allow-secret)"
        )
        return SecretInMemory(message, self.kind, where)


def find_secret(fields: dict[str, str | None]) -> SecretFound | None:
    """The first secret of the first field holding one (text, title, ...), else None."""
    for field, value in fields.items():
        if not value:
            continue
        findings = find_secrets(value)
        if findings:
            start = findings[0].start
            line = value.count("\n", 0, start) + 1
            column = start - (value.rfind("\n", 0, start) + 1) + 1
            return SecretFound(field, findings[0].kind, line, column, start)
    return None
