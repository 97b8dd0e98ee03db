"""A tiny LoCoMo-format file, written here: two conversations of two sessions each, and
questions whose evidence strings have the published data's quirks (several ids in one string,
"D:1:1", "D", a turn that does not exist, no evidence at all)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

BUBBLES = "My sourdough starter Bubbles doubled overnight after I fed it dark rye flour."
GLACIER = "We hiked the Perito Moreno glacier in Patagonia and heard the ice calving."
TURBINES = "The tidal turbines off the headland now power the whole harbour village."
LAMP_SHORT = "I finally fixed the old lighthouse lamp yesterday."
# Conversation A holds conversation B's LAMP_SHORT turn word for word at its start: a hit of A
# shows B's turn, and must never count for a question of B.
LAMP_LONG = LAMP_SHORT + " It runs on a brass kerosene burner now."
# Two turns of A of 60 words each (the two of them: more than the word budget at 5, 5 x 23),
# that rank above B's TURBINES turn for B's question about it when both conversations are searched.
HARBOUR = " ".join(["harbour village tidal turbines"] * 15)

CONVERSATIONS = {
    "conv-a": {
        "speaker_a": "Ada",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "Hi Ben! How was your week?"},
            {
                "speaker": "Ben",
                "dia_id": "D1:2",
                "text": BUBBLES,
                "blip_caption": "a photo of a jar of bubbling dough",
            },
            {"speaker": "Ada", "dia_id": "D1:3", "text": HARBOUR},
        ],
        "session_2_date_time": "7:55 pm on 9 June, 2023",
        "session_2": [
            {"speaker": "Ada", "dia_id": "D2:1", "text": LAMP_LONG},
            {"speaker": "Ben", "dia_id": "D2:2", "text": "Nice, how was the trip?"},
            {"speaker": "Ada", "dia_id": "D2:3", "text": GLACIER},
            {"speaker": "Ben", "dia_id": "D2:4", "text": HARBOUR},
        ],
        "session_3_date_time": "10:00 am on 1 July, 2023",  # a date without a session, as conv-26 has
    },
    "conv-b": {
        "speaker_a": "Cleo",
        "speaker_b": "Dan",
        "session_1_date_time": "9:15 am on 3 March, 2023",
        "session_1": [
            {"speaker": "Cleo", "dia_id": "D1:1", "text": TURBINES},
            {"speaker": "Dan", "dia_id": "D1:2", "text": LAMP_SHORT},
        ],
        "session_2_date_time": "4:30 pm on 12 April, 2023",
        "session_2": [
            {"speaker": "Dan", "dia_id": "D2:1", "text": "The kids painted the fence blue and green."},
        ],
    },
}

QUESTIONS: dict[str, list[dict[str, Any]]] = {
    "conv-a": [
        {"question": "What did Ben feed Bubbles the sourdough starter?", "evidence": ["D1:2"], "category": 4},
        # Two ids in one string and a malformed one; the words find D2:3 (session 2) alone.
        {"question": "Which glacier in Patagonia calving?", "evidence": ["D1:2; D2:3", "D"], "category": 1},
    ],
    "conv-b": [
        {"question": "harbour village tidal turbines", "evidence": ["D:1:1"], "category": 2},
        # Only conversation A's turn has these words: within B, nothing is found; across, A's
        # turn shows B's evidence turn, but it is A's.
        {"question": "brass kerosene burner", "evidence": ["D1:2"], "category": 3},
        {"question": "What about the moon?", "evidence": ["D9:9"], "category": 5, "adversarial_answer": "x"},
        {"question": "Is Dan an artist?", "evidence": [], "category": 3},
    ],
}


def locomo_samples() -> list[dict[str, Any]]:
    return [
        {
            "sample_id": sample_id,
            "conversation": conversation,
            "qa": [{"answer": "?", **qa} for qa in QUESTIONS[sample_id]],
            "session_summary": {},
        }
        for sample_id, conversation in CONVERSATIONS.items()
    ]


def write_locomo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(locomo_samples(), indent=1), encoding="utf-8")
    return path
