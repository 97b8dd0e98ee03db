"""A LoCoMo-format file (conversational memory: Maharana et al., ACL 2024), read and scored.

Pure: the dataset as published (a JSON list of samples, each a `conversation` of
`session_<n>` turn lists with their `session_<n>_date_time`, and `qa` questions naming
their evidence turns by dia_id, "D<session>:<turn>"), each conversation as the claude.ai
export a user would hold (one conversation per session), and the recall measures computed
from the hits' texts. pgrecall.composition.conversation_evaluation indexes and searches.

A turn is found in a text when its key (its first KEY_WORDS words, lower-cased, punctuation
as spaces) is in the text normalised the same way, on word boundaries: whatever the unit
a hit is (one message, or a window of several), the turns it holds are the ones it shows.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pgrecall.errors import InvalidInput

KEY_WORDS = 12
MEAN_TURN_WORDS = 23  # LoCoMo's mean turn: the word budget of k hits is k x 23 words
CUTOFFS = (5, 10, 25)
METRICS = ("budget", "passage", "turn", "session")
# By the paper's counts and its evaluation code.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# Reported besides each category: every question, and those with an answer in the conversation.
GROUPS = {"all": None, "1-4": (1, 2, 3, 4)}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
# Seen in the published data: "D:11:26" for D11:26, "D30:05" for D30:5.
_LOOSE_DIA_ID = re.compile(r"D:?0*(\d+):0*(\d+)")
_PUNCTUATION = re.compile(r"[^\w\s]|_")


@dataclasses.dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str | None = None  # a shared photo's caption (the photos are not released)


@dataclasses.dataclass(frozen=True)
class Session:
    number: int
    date_time: datetime.datetime | None
    turns: tuple[Turn, ...]


@dataclasses.dataclass(frozen=True)
class Question:
    conversation: str  # its sample_id
    text: str
    category: int
    evidence: tuple[str, ...]  # valid dia_ids of turns of its conversation, in order, once each


@dataclasses.dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]

    def turns(self) -> dict[str, Turn]:
        return {turn.dia_id: turn for session in self.sessions for turn in session.turns}


@dataclasses.dataclass
class EvidenceCounts:
    """What the questions' evidence strings held, as the dataset has them."""

    ids: int = 0  # valid ids kept
    split: int = 0  # strings holding several ids ("D8:6; D9:17"), split
    repaired: int = 0  # ids written loosely ("D:11:26", "D30:05"), read as the id they name
    malformed: int = 0  # pieces that are no id ("D"), skipped
    missing: int = 0  # ids of turns the conversation does not have, skipped
    questions_without_evidence: int = 0  # skipped: nothing to recall


@dataclasses.dataclass(frozen=True)
class Dataset:
    name: str
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]  # those with at least one valid evidence turn
    evidence: EvidenceCounts


def looks_like_locomo(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(s, dict) and isinstance(s.get("conversation"), dict) and "qa" in s for s in value)
    )


def parse_date_time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=datetime.UTC)
    except ValueError:
        return None


def _turn(value: Any, session: int) -> Turn | None:
    if not isinstance(value, dict) or not isinstance(value.get("dia_id"), str):
        return None
    text, caption = value.get("text"), value.get("blip_caption")
    return Turn(
        value["dia_id"],
        session,
        str(value.get("speaker") or "unknown"),
        text if isinstance(text, str) else "",
        caption.strip() if isinstance(caption, str) and caption.strip() else None,
    )


def parse_conversation(sample_id: str, value: dict[str, Any]) -> Conversation:
    """Its sessions in number order: only keys whose value is a list are sessions."""
    sessions = []
    for key, turns in value.items():
        match = _SESSION_KEY.fullmatch(key)
        if match and isinstance(turns, list):
            number = int(match.group(1))
            parsed = (_turn(turn, number) for turn in turns)
            date_time = parse_date_time(value.get(f"{key}_date_time"))
            sessions.append(Session(number, date_time, tuple(turn for turn in parsed if turn is not None)))
    sessions.sort(key=lambda session: session.number)
    speakers = (str(value.get("speaker_a") or "speaker A"), str(value.get("speaker_b") or "speaker B"))
    return Conversation(sample_id, *speakers, tuple(sessions))


def parse_evidence(values: Any, turns: dict[str, Turn], counts: EvidenceCounts) -> tuple[str, ...]:
    """The valid ids among a question's evidence strings; what was split, repaired or skipped is counted."""
    found: list[str] = []
    for value in values if isinstance(values, list) else []:
        pieces = [piece for piece in re.split(r"[;,\s]+", str(value)) if piece]
        if len(pieces) > 1:
            counts.split += 1
        for piece in pieces:
            if _DIA_ID.fullmatch(piece):
                dia_id = piece
            elif loose := _LOOSE_DIA_ID.fullmatch(piece):
                dia_id = f"D{int(loose.group(1))}:{int(loose.group(2))}"
                counts.repaired += 1
            else:
                counts.malformed += 1
                continue
            if dia_id not in turns:
                counts.missing += 1
            elif dia_id not in found:
                found.append(dia_id)
                counts.ids += 1
    return tuple(found)


def parse_dataset(name: str, value: Any, source: str | None = None) -> Dataset:
    """`source`: where the value was read, for errors (default: the name)."""
    source = source or name
    if not looks_like_locomo(value):
        raise InvalidInput(f"{source}: not a LoCoMo file (a JSON list of objects with conversation and qa)")
    conversations: list[Conversation] = []
    questions: list[Question] = []
    counts = EvidenceCounts()
    for number, sample in enumerate(value):
        sample_id = str(sample.get("sample_id") or f"conversation-{number + 1}")
        conversation = parse_conversation(sample_id, sample["conversation"])
        conversations.append(conversation)
        turns = conversation.turns()
        for qa in sample["qa"] if isinstance(sample["qa"], list) else []:
            if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
                continue
            evidence = parse_evidence(qa.get("evidence"), turns, counts)
            if not evidence:
                counts.questions_without_evidence += 1
                continue
            category = qa.get("category")
            questions.append(
                Question(sample_id, qa["question"], category if isinstance(category, int) else 0, evidence)
            )
    if len({c.sample_id for c in conversations}) < len(conversations):
        raise InvalidInput(f"{source}: two conversations have the same sample_id")
    return Dataset(name, tuple(conversations), tuple(questions), counts)


def load(path: Path) -> Dataset:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_dataset(path.stem, value, str(path))


def session_uuid(sample_id: str, number: int) -> str:
    return f"{sample_id}-session-{number}"


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def claude_export(conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation as a claude.ai export's conversations.json would hold it: one conversation
    per session, the session's date as its time, each turn a message with its speaker's name
    before its text (the first speaker as the human, the other as the assistant)."""
    name = f"{conversation.speaker_a} and {conversation.speaker_b}"
    export = []
    for session in conversation.sessions:
        when = _iso(session.date_time)
        export.append(
            {
                "uuid": session_uuid(conversation.sample_id, session.number),
                "name": name,
                "created_at": when,
                "updated_at": when,
                "chat_messages": [
                    {
                        "uuid": f"{conversation.sample_id}-{turn.dia_id}",
                        "sender": "human" if turn.speaker == conversation.speaker_a else "assistant",
                        "text": message_text(turn),
                        "created_at": when,
                    }
                    for turn in session.turns
                ],
            }
        )
    return export


def message_text(turn: Turn) -> str:
    """The speaker's name before the text, and a shared photo's caption after it."""
    text = f"{turn.speaker}: {turn.text}"
    return f"{text} [shared {turn.caption}]" if turn.caption else text


def words(text: str) -> list[str]:
    """Lower-cased, punctuation as spaces, split on whitespace."""
    return _PUNCTUATION.sub(" ", text.lower()).split()


def turn_key(text: str) -> str:
    return " ".join(words(text)[:KEY_WORDS])


def contains(key: str, text_words: Sequence[str]) -> bool:
    """The key is in the words, on word boundaries; an empty key (a turn without words) never is."""
    return bool(key) and f" {key} " in f" {' '.join(text_words)} "


@dataclasses.dataclass(frozen=True)
class HitText:
    """What a measure needs of a hit: its text, and where its document is (None: another dataset's)."""

    text: str
    conversation: str | None
    session: int | None


def _found(keys: dict[str, str], texts: Iterable[list[str]]) -> set[str]:
    found: set[str] = set()
    for text_words in texts:
        found.update(dia_id for dia_id, key in keys.items() if dia_id not in found and contains(key, text_words))
    return found


def _within_budget(keys: dict[str, str], question: Question, hits: Sequence[HitText], k: int) -> float:
    """The share of the evidence turns within the first k x 23 words of the hits' texts."""
    budget, kept = k * MEAN_TURN_WORDS, []
    for hit in hits:
        if budget <= 0:
            break
        text_words = words(hit.text)
        if hit.conversation == question.conversation:
            kept.append(text_words[:budget])
        budget -= len(text_words)
    return len(_found(keys, kept)) / len(keys)


def question_recall(
    question: Question,
    turns: dict[str, Turn],
    hits: Sequence[HitText],
    cutoffs: Sequence[int] = CUTOFFS,
    served: dict[int, Sequence[HitText]] | None = None,
) -> dict[str, float]:
    """The question's recalls at each cutoff: budget@k (its evidence turns within the first
    k x 23 words of the hits' texts), turn@k (within the first k hits) and session@k (its
    evidence sessions among the first k hits' sessions); and, where `served` holds the passages
    a search for k serves (neighbouring hits joined), passage@k: budget@k over those passages.
    A hit of another conversation takes its place and its words but never matches."""
    keys = {dia_id: turn_key(turns[dia_id].text) for dia_id in question.evidence}
    sessions = {turns[dia_id].session for dia_id in question.evidence}
    own = [hit.conversation == question.conversation for hit in hits]
    result: dict[str, float] = {}
    for k in cutoffs:
        result[f"budget@{k}"] = _within_budget(keys, question, hits, k)
        if served is not None:
            result[f"passage@{k}"] = _within_budget(keys, question, served[k], k)
        first = [words(hit.text) for hit, is_own in zip(hits[:k], own[:k], strict=True) if is_own]
        result[f"turn@{k}"] = len(_found(keys, first)) / len(keys)
        hit_sessions = {hit.session for hit, is_own in zip(hits[:k], own[:k], strict=True) if is_own}
        result[f"session@{k}"] = len(sessions & hit_sessions) / len(sessions)
    return result


def metric_names(cutoffs: Sequence[int] = CUTOFFS) -> list[str]:
    return [f"{metric}@{k}" for metric in METRICS for k in cutoffs]


def aggregate(categories: Sequence[int], recalls: Sequence[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean recalls per group of questions: every question ("all"), categories 1-4, each category."""
    groups: dict[str, tuple[int, ...] | None] = {**GROUPS, **{str(c): (c,) for c in sorted(set(categories))}}
    result: dict[str, dict[str, float]] = {}
    for label, members in groups.items():
        chosen = [r for category, r in zip(categories, recalls, strict=True) if members is None or category in members]
        if chosen:
            means = {name: round(sum(r[name] for r in chosen) / len(chosen), 4) for name in chosen[0]}
            result[label] = {"questions": len(chosen), **means}
    return result
