"""What `remember` refuses at the door: a near-duplicate of a memory already kept, and a secret.

Pure functions: the memory service (pgrecall.worker.memory.writer) gives them the new
text, and for near-duplicates the nearest memories by vector (sql/queries/door.sql) with
the text their notes hold; these decide.

A memory is similar to the new text when their vectors' cosine similarity is at least
PGRECALL_MEMORY_DUPLICATE_SIMILARITY and they share at least one rare term. The threshold
was chosen on hand-written pairs (bench/duplicate_threshold.py): the model puts "Staging
runs three replicas" and "Staging now runs 3 replicas" close, but also "Staging runs three
replicas" and "Production runs three replicas". The shared rare term keeps a pair of short
texts that the model finds alike by their shape alone ("I like tea" and "We prefer coffee")
from counting.

A similar memory is a near-duplicate, and refused, only when the new text brings no detail
it lacks and lacks none it has: a number (words and digits alike, "three" and "3", "2 am"
and "02:00"), an identifier ("E-4711", "QZ3-B003", "parse_date"), a proper name (a
capitalised word inside a sentence, an acronym; or the first words, "Alice ..." against
"Bob ...") or a negation. The model reads "E-4711" and "E-4712", "three" and "five",
"is" and "is not" as nearly the same; they are another fact, which is saved, and the
answer names the similar memory so that the caller can update it instead.

A secret is what the ingest redaction finds (pgrecall.worker.redaction.find_secrets); the
refusal names its kind and where it is, never the secret itself.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from pgrecall.memory.client import NearDuplicate, SecretInMemory
from pgrecall.memory.client import SimilarMemory as Candidate
from pgrecall.terms import identifier_terms
from pgrecall.worker.redaction import find_secrets

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
_ENGLISH_STOP_WORDS_SET = frozenset(_STOP_WORDS.split())
_GERMAN_STOP_WORDS_SET = frozenset(_GERMAN_STOP_WORDS.split())
STOP_WORDS = _ENGLISH_STOP_WORDS_SET | _GERMAN_STOP_WORDS_SET
_WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*")
_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "twenty": "20", "thirty": "30",
    "forty": "40", "fifty": "50", "hundred": "100",
    "eins": "1", "zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6", "sieben": "7", "acht": "8",
    "neun": "9", "zehn": "10", "elf": "11", "zwölf": "12", "zwanzig": "20", "dreißig": "30", "hundert": "100",
}  # fmt: skip
# "one" and "eins" are numbers in a rare term, but as a detail "one" is as often a pronoun ("the one").
_DETAIL_NUMBER_WORDS = {word: digits for word, digits in _NUMBER_WORDS.items() if word not in ("one", "eins")} | {
    "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "thousand": "1000",
    "dozen": "12", "vierzig": "40", "fünfzig": "50", "tausend": "1000", "twice": "2",
    "first": "1", "third": "3", "fourth": "4", "fifth": "5", "sixth": "6", "tenth": "10",
}  # fmt: skip
_NEGATION_WORDS = """
    not no never none nothing nobody neither nor without cannot cant dont doesnt didnt isnt arent wasnt
    werent wont wouldnt shouldnt couldnt hasnt havent hadnt mustnt
    nicht kein keine keinen keinem keiner keines nie niemals nichts ohne niemand
"""
_NEGATIONS = frozenset(_NEGATION_WORDS.split())
# "X, not Y" says what "X rather than Y" and "X instead of Y" say.
_CONTRASTS = re.compile(r"\b(?:rather than|instead of|an ?statt)\b", re.IGNORECASE)
_COMPOUND = re.compile(
    r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five|six|seven|eight|nine)\b",
    re.IGNORECASE,
)
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th|\.)(?=\W|$)", re.IGNORECASE)
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\b|\b(\d{1,2})\s*([ap])\.?m\b\.?", re.IGNORECASE)
_THOUSANDS = re.compile(r"(?<=\d)[,'](?=\d{3}\b)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SENTENCE = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)([^\W\d_][\w'-]*)")
_WORDS_ONLY = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
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


def _hour(match: re.Match[str]) -> str:
    if match.group(1) is not None:  # 14:00 -> 14, 14:30 stays
        hour, minutes = int(match.group(1)), match.group(2)
        return str(hour) if minutes == "00" else f"{hour}:{minutes}"
    hour = int(match.group(3)) % 12 + (12 if match.group(4).lower() == "p" else 0)
    return str(hour)


def _compound(match: re.Match[str]) -> str:
    return str(int(_DETAIL_NUMBER_WORDS[match.group(1).lower()]) + int(_NUMBER_WORDS[match.group(2).lower()]))


def numbers(text: str) -> frozenset[str]:
    """The numbers `text` states, as digits: "three" and "3", "thirty-five" and "35", "2 am" and "02:00",
    "1,000" and "1000" alike."""
    text = _COMPOUND.sub(_compound, text)
    plain = _ORDINAL.sub(r"\1", _THOUSANDS.sub("", _TIME.sub(lambda match: f" {_hour(match)} ", text)))
    found = {str(float(n)).removesuffix(".0") for n in _NUMBER.findall(plain)}
    found.update(
        _DETAIL_NUMBER_WORDS[w] for w in (w.lower() for w in _WORD.findall(plain)) if w in _DETAIL_NUMBER_WORDS
    )
    return frozenset(found)


def identifiers(text: str) -> frozenset[str]:
    """Codes and names of code ("E-4711", "QZ3-B003", "parse_date", "eu-west-1"), lower-cased, their
    dashes dropped ("E4711" is "E-4711"); words joined by a dash only ("on-call") are none."""
    return frozenset(
        term.replace("-", "")
        for term in identifier_terms(text)
        if not _WORDS_ONLY.fullmatch(term) and not _ORDINAL.fullmatch(term)
    )


def _is_german(words: list[str]) -> bool:
    lowered = [word.lower() for word in words]
    german = sum(word in _GERMAN_STOP_WORDS_SET for word in lowered)
    return german >= 2 and german > sum(word in _ENGLISH_STOP_WORDS_SET for word in lowered)


def names(text: str) -> frozenset[str]:
    """Proper names: capitalised words inside a sentence ("the March outage", "Alice's laptop") and
    acronyms ("TLS"), as terms. A German text capitalises every noun: there, only acronyms."""
    words = _WORD.findall(text)
    starts = {match.start(1) for match in _SENTENCE.finditer(text)}
    german = _is_german(words)
    found = set()
    for match in _WORD.finditer(text):
        word = match.group()
        if not word[0].isupper() or _term(word) in STOP_WORDS:
            continue
        acronym = len(word) > 1 and word.isupper() and word.isalpha()
        if acronym or (not german and match.start() not in starts and not word.isupper()):
            found.add(_term(word))
    return frozenset(found)


def _first_name(text: str) -> str | None:
    """The text's first word when it is capitalised and no stop word: maybe a name, maybe not."""
    words = _WORD.findall(text)
    if words and words[0][0].isupper() and _term(words[0]) not in STOP_WORDS:
        return _term(words[0])
    return None


def is_negated(text: str) -> bool:
    words = _WORD.findall(text)
    return bool(_CONTRASTS.search(text)) or any(_term(w) in _NEGATIONS or w.lower().endswith("n't") for w in words)


def _named_in(name: str, text: str, terms: frozenset[str]) -> bool:
    """Whether `text` names `name` too: as a word, one it abbreviates or is short for ("Postgres",
    "PostgreSQL"; "EUR", "euros"), or by initials ("LB", "load balancer")."""
    if name in terms or any(
        len(name) >= 3 and (t.startswith(name) or name.startswith(t)) and len(t) >= 3 for t in terms
    ):
        return True
    initials = "".join(word[0].lower() for word in _WORD.findall(text))
    return 2 <= len(name) <= 5 and name.isalpha() and name in initials


def new_details(text: str, other: str) -> list[str]:
    """What tells `text` and `other` apart as facts although their words may read alike: the numbers,
    identifiers and names one has and the other lacks, and a negation in one only. Empty: no such detail."""
    differ = [*sorted(numbers(text) ^ numbers(other)), *sorted(identifiers(text) ^ identifiers(other))]
    terms, other_terms = _all_terms(text), _all_terms(other)
    differ += sorted(
        {name for name in names(text) if not _named_in(name, other, other_terms)}
        | {name for name in names(other) if not _named_in(name, text, terms)}
    )
    first, other_first = _first_name(text), _first_name(other)
    if first and other_first and first not in other_terms and other_first not in terms:
        differ += [first, other_first]  # "Alice owns billing" / "Bob owns billing"
    if is_negated(text) != is_negated(other):
        differ.append("a negation")
    return differ


def _all_terms(text: str) -> frozenset[str]:
    return frozenset(_term(word) for word in _WORD.findall(text))


def is_similar(text: str, candidate: Candidate, threshold: float) -> bool:
    """Close by vector and sharing a rare term: the same fact, or another with the same words."""
    return candidate.similarity >= threshold and bool(rare_terms(text) & rare_terms(candidate.text))


def is_near_duplicate(text: str, candidate: Candidate, threshold: float) -> bool:
    """Similar and bringing no detail of its own: the same fact again, refused."""
    return is_similar(text, candidate, threshold) and not new_details(text, candidate.text)


def near_duplicates(text: str, candidates: Iterable[Candidate], threshold: float) -> list[Candidate]:
    """The candidates that are near-duplicates of `text`, most similar first."""
    found = [candidate for candidate in candidates if is_near_duplicate(text, candidate, threshold)]
    return sorted(found, key=lambda candidate: (-candidate.similarity, candidate.id))


def similar_facts(text: str, candidates: Iterable[Candidate], threshold: float) -> list[Candidate]:
    """The candidates similar to `text` that state another fact (a detail differs), most similar
    first: `text` is saved, and the answer names them."""
    found = [
        candidate
        for candidate in candidates
        if is_similar(text, candidate, threshold) and not is_near_duplicate(text, candidate, threshold)
    ]
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
